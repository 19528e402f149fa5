package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// secretWorkspace builds the workspace of the exclusion tests: a git work
// tree with secrets, a .gitignored build directory, a nested .gitignore
// and a .looprigignore. Every file's content is unique, so a blob can be
// told by it.
func secretWorkspace(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range map[string]string{
		".env":           "SECRET_ENV=1\n",
		".env.local":     "SECRET_LOCAL=1\n",
		".env.example":   "EXAMPLE=\n",
		"id_ed25519":     "-----BEGIN OPENSSH PRIVATE KEY-----\n",
		"id_ed25519.pub": "ssh-ed25519 AAAA public\n",
		".ssh/config":    "Host secret-host\n",
		".git/config":    "[remote \"origin\"]\n\turl = https://ghp_token@github.com/x/y\n",
		".git/HEAD":      "ref: refs/heads/main\n",
		".gitignore":     "build/\n",
		"build/out.bin":  "BUILD OUTPUT\n",
		"sub/.gitignore": "*.log\n!keep.log\n",
		"sub/a.log":      "LOG A\n",
		"sub/keep.log":   "KEEP LOG\n",
		".looprigignore": "scratch/\n",
		"scratch/t.txt":  "SCRATCH\n",
		"src/main.go":    "package main\n",
	} {
		write(t, root, p, content, 0o644)
	}
	return root
}

// secretContents are the contents of secretWorkspace no blob may hold.
var secretContents = []string{"SECRET_ENV", "SECRET_LOCAL", "PRIVATE KEY", "secret-host", "ghp_token", "BUILD OUTPUT", "LOG A", "SCRATCH"}

// TestTakeExcludes takes the secret workspace with memstore: exactly the
// paths no rule excludes are in the manifest, Excluded lists the others
// with the rule's reason, and no blob holds an excluded file's content.
// checkpoint_include takes .env.local back.
func TestTakeExcludes(t *testing.T) {
	ctx := context.Background()
	root := secretWorkspace(t)
	blobs := memstore.New()
	res, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantKept := []string{".env.example", ".git/HEAD", ".gitignore", ".looprigignore", "id_ed25519.pub", "src/main.go", "sub/.gitignore", "sub/keep.log"}
	if got := manifestPaths(t, blobs, res.Manifest); !reflect.DeepEqual(got, wantKept) {
		t.Errorf("kept %q\nwant %q", got, wantKept)
	}
	secret, gitignore, ignore := ExcludeSecret, ExcludeGitignore, ExcludeIgnore
	wantExcluded := []ExcludedPath{
		{".env", false, secret},
		{".env.local", false, secret},
		{".git/config", false, secret},
		{".ssh", true, secret},
		{"build", true, gitignore},
		{"id_ed25519", false, secret},
		{"scratch", true, ignore},
		{"sub/a.log", false, gitignore},
	}
	sortExcluded(res.Excluded)
	if !reflect.DeepEqual(res.Excluded, wantExcluded) {
		t.Errorf("excluded %v\nwant %v", res.Excluded, wantExcluded)
	}
	for _, s := range secretContents {
		if d, ok := blobHolding(t, blobs, s); ok {
			t.Errorf("blob %s holds %q", d, s)
		}
	}

	// checkpoint_include takes .env.local back, and nothing else.
	blobs = memstore.New()
	res, err = Take(ctx, blobs, root, Options{Include: []string{".env.local"}})
	if err != nil {
		t.Fatal(err)
	}
	wantKept = append([]string{".env.example", ".env.local"}, wantKept[1:]...)
	if got := manifestPaths(t, blobs, res.Manifest); !reflect.DeepEqual(got, wantKept) {
		t.Errorf("with .env.local included: kept %q\nwant %q", got, wantKept)
	}
	if _, ok := blobHolding(t, blobs, "SECRET_LOCAL"); !ok {
		t.Error("the included .env.local's content is in no blob")
	}
	sortExcluded(res.Excluded)
	if len(res.Excluded) != len(wantExcluded)-1 || res.Excluded[1].Path != ".git/config" {
		t.Errorf("with .env.local included: excluded %v", res.Excluded)
	}
}

func sortExcluded(ex []ExcludedPath) {
	sort.Slice(ex, func(i, j int) bool { return ex[i].Path < ex[j].Path })
}

func manifestPaths(t *testing.T, blobs storage.BlobStore, d storage.Digest) []string {
	t.Helper()
	m, err := Load(context.Background(), blobs, d)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range m.Entries {
		paths = append(paths, e.Path)
	}
	return paths
}

// blobHolding returns a blob whose content contains s.
func blobHolding(t *testing.T, blobs storage.BlobStore, s string) (storage.Digest, bool) {
	t.Helper()
	ctx := context.Background()
	var found storage.Digest
	errFound := errors.New("found")
	err := blobs.ListBlobs(ctx, func(info storage.BlobInfo) error {
		r, err := blobs.GetBlob(ctx, info.Digest)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(s)) {
			found = info.Digest
			return errFound
		}
		return nil
	})
	if err != nil && err != errFound {
		t.Fatal(err)
	}
	return found, err == errFound
}

// TestDefaultExcludes checks each default at the root and deeper, and the
// names it must leave alone.
func TestDefaultExcludes(t *testing.T) {
	f, err := NewFilter(t.TempDir(), FilterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	excluded := []string{
		".env", "app/.env", ".env.local", "a/b/.env.production", ".envrc",
		"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "keys/id_ed25519", "id_ecdsa_sk", "id_ed25519_sk", "id_rsa_work", "id_rsa-cert", "id_rsa.bak",
		"cert.pem", "a/server.key", "x.p12", "x.pfx", "AuthKey_1.p8", "putty.ppk", "x.jks", "release.keystore", "krb5.keytab",
		".ssh/", "home/.ssh/", ".aws/", "home/.aws/", ".gnupg/", ".azure/", ".config/gcloud/", "home/.config/gcloud/",
		".kube/config", "home/.kube/config", ".docker/config.json", "home/.docker/config.json",
		".netrc", "_netrc", "home/.netrc", ".git-credentials", ".config/git/credentials", ".npmrc", "pkg/.npmrc", ".pypirc", ".pgpass", ".my.cnf", ".vault-token",
		".config/gh/hosts.yml", ".cargo/credentials", ".cargo/credentials.toml", ".claude/.credentials.json", "home/.codex/auth.json",
		".git/config", "vendor/lib/.git/config", ".git/modules/lib/config", ".git/modules/a/b/config",
	}
	kept := []string{
		".env.example", "app/.env.sample", ".env.template", ".env.dist", ".environment", "env", "x.env",
		"id_rsa.pub", "id_ed25519.pub", "keys/id_ecdsa.pub", "id_rsa-cert.pub", "my_id_rsa",
		"pem", "keystore.go", "x.keys", "key", "README.md", "config",
		".ssh", ".config/", ".config/other", ".kube/", ".kube/cache", ".docker/", "docker/config.json", "kube/config",
		".git/", ".git/HEAD", ".git/refs/heads/config", ".git/modules/", ".git/modules/lib/refs/heads/config", ".git/modules/lib/logs/refs/heads/config", "config.git",
		".claude/settings.json", ".codex/config.toml",
	}
	check := func(p string, want bool) {
		t.Helper()
		isDir := strings.HasSuffix(p, "/")
		p = strings.TrimSuffix(p, "/")
		ex, why := f.Excluded(p, isDir)
		if ex != want || (want && why != ExcludeSecret) {
			t.Errorf("Excluded(%q, %v) = %v, %q; want %v", p, isDir, ex, why, want)
		}
	}
	for _, p := range excluded {
		check(p, true)
	}
	for _, p := range kept {
		check(p, false)
	}
	// Below an excluded directory everything is excluded, with its reason.
	if ex, why := f.Excluded(".aws/credentials", false); !ex || why != ExcludeSecret {
		t.Errorf(".aws/credentials: %v, %q", ex, why)
	}
}

// TestFilterDeepPathOutOfOrder: a path 4,000 directories deep asked
// about first costs one decision per directory, not one per directory
// and depth.
func TestFilterDeepPathOutOfOrder(t *testing.T) {
	f, err := NewFilter(t.TempDir(), FilterOptions{Exclude: []string{"**/x/**/y"}})
	if err != nil {
		t.Fatal(err)
	}
	p := strings.Repeat("x/", 4000) + "y"
	start := time.Now()
	if ex, why := f.Excluded(p, false); !ex || why != ExcludeProfile {
		t.Errorf("Excluded = %v, %q", ex, why)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// gitTree makes root a git work tree (a .git directory) and writes files.
func gitTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	write(t, root, ".git/HEAD", "ref: refs/heads/main\n", 0o644)
	for p, c := range files {
		write(t, root, p, c, 0o644)
	}
	return root
}

// walked walks root with opts and returns what it kept (files, links,
// empty directories) and what it excluded ("path:reason").
func walked(t *testing.T, root string, opts Options) (kept, excluded []string) {
	t.Helper()
	s, err := walk(context.Background(), root, opts)
	if err != nil {
		t.Fatal(err)
	}
	m := s.manifest()
	for _, e := range m.Entries {
		kept = append(kept, e.Path)
	}
	for _, e := range m.Excluded {
		excluded = append(excluded, e.Path+":"+string(e.Reason))
	}
	return kept, excluded
}

// TestFilterRules walks small trees for each rule of precedence and
// git's semantics.
func TestFilterRules(t *testing.T) {
	for _, tc := range []struct {
		name     string
		git      bool
		files    map[string]string
		opts     Options
		kept     string // the kept paths, space-separated
		excluded string // path:reason, space-separated
	}{
		{
			name:     "gitignore outside a work tree is a file like another",
			files:    map[string]string{".gitignore": "*.log\n", "a.log": ""},
			kept:     ".gitignore a.log",
			excluded: "",
		},
		{
			name:     "nested gitignore applies below its directory only",
			git:      true,
			files:    map[string]string{"sub/.gitignore": "*.log\n/top\n", "a.log": "", "sub/b.log": "", "sub/deep/c.log": "", "sub/top": "", "sub/deep/top": ""},
			kept:     ".git/HEAD a.log sub/.gitignore sub/deep/top",
			excluded: "sub/b.log:gitignore sub/deep/c.log:gitignore sub/top:gitignore",
		},
		{
			name:     "a deeper gitignore's negation wins over its parent's",
			git:      true,
			files:    map[string]string{".gitignore": "*.log\nvendor/\n", "a/.gitignore": "!keep.log\n!vendor\n", "a/keep.log": "", "keep.log": "", "a/vendor/x": "", "vendor/x": ""},
			kept:     ".git/HEAD .gitignore a/.gitignore a/keep.log a/vendor/x",
			excluded: "keep.log:gitignore vendor:gitignore",
		},
		{
			name:     "nothing below an excluded directory comes back",
			git:      true,
			files:    map[string]string{".gitignore": "build/\n!build/keep\n*.log\n!important/\n", "build/keep": "", "important/a.log": "", "important/b": ""},
			kept:     ".git/HEAD .gitignore important/b",
			excluded: "build:gitignore important/a.log:gitignore",
		},
		{
			name:     "double stars",
			git:      true,
			files:    map[string]string{".gitignore": "**/gen/**\na/**/z\n", "gen/x": "", "p/gen/y": "", "a/z": "", "a/b/c/z": "", "b/a/z": ""},
			kept:     ".git/HEAD .gitignore a/b/c b/a/z gen p/gen", // emptied directories stay
			excluded: "a/b/c/z:gitignore a/z:gitignore gen/x:gitignore p/gen/y:gitignore",
		},
		{
			name:     "a gitignore never hides .git",
			git:      true,
			files:    map[string]string{".gitignore": ".*\n!.gitignore\nHEAD\nobjects/\n", ".git/objects/ab/cd": "", ".hidden": ""},
			kept:     ".git/HEAD .git/objects/ab/cd .gitignore",
			excluded: ".hidden:gitignore",
		},
		{
			name:     "info/exclude is below every .gitignore",
			git:      true,
			files:    map[string]string{".git/info/exclude": "*.tmp\n*.bak\n", ".gitignore": "!keep.tmp\n", "a.tmp": "", "keep.tmp": "", "x.bak": ""},
			kept:     ".git/HEAD .git/info/exclude .gitignore keep.tmp",
			excluded: "a.tmp:gitignore x.bak:gitignore",
		},
		{
			name:     "looprigignore wins over gitignore, checkpoint_exclude over both",
			git:      true,
			files:    map[string]string{".gitignore": "build/\n*.o\n", ".looprigignore": "!build/\n*.tmp\n", "build/x": "", "a.o": "", "a.tmp": "", "b.tmp": ""},
			opts:     Options{Exclude: []string{"!a.tmp", "*.md"}},
			kept:     ".git/HEAD .gitignore .looprigignore a.tmp build/x",
			excluded: "a.o:gitignore b.tmp:looprigignore",
		},
		{
			name:     "checkpoint_exclude applies outside a work tree",
			files:    map[string]string{"a.md": "", "b.txt": ""},
			opts:     Options{Exclude: []string{"*.md"}},
			kept:     "b.txt",
			excluded: "a.md:profile",
		},
		{
			name:     "no workspace rule takes a secret back",
			git:      true,
			files:    map[string]string{".gitignore": "!.env\n!.npmrc\n", ".looprigignore": "!.env\n!*.pem\n", ".env": "", ".npmrc": "", "a.pem": "", "id_rsa": ""},
			opts:     Options{Exclude: []string{"!id_rsa"}},
			kept:     ".git/HEAD .gitignore .looprigignore",
			excluded: ".env:secret .npmrc:secret a.pem:secret id_rsa:secret",
		},
		{
			name:     "checkpoint_include takes a directory back whole, and gitignored paths",
			git:      true,
			files:    map[string]string{".gitignore": "build/\n*.log\n", ".ssh/id_rsa": "", ".ssh/config": "", ".aws/credentials": "", "build/out": "", "build/x.log": "", "y.log": ""},
			opts:     Options{Include: []string{".ssh/", "build", "*.log", "!y.log"}},
			kept:     ".git/HEAD .gitignore .ssh/config .ssh/id_rsa build/out build/x.log",
			excluded: ".aws:secret y.log:gitignore",
		},
		{
			name:     "a path inside an excluded directory is not taken back alone",
			files:    map[string]string{".ssh/config": ""},
			opts:     Options{Include: []string{".ssh/config"}},
			kept:     "",
			excluded: ".ssh:secret",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var root string
			if tc.git {
				root = gitTree(t, tc.files)
			} else {
				root = t.TempDir()
				for p, c := range tc.files {
					write(t, root, p, c, 0o644)
				}
			}
			kept, excluded := walked(t, root, tc.opts)
			if got := strings.Join(kept, " "); got != tc.kept {
				t.Errorf("kept %q\nwant %q", got, tc.kept)
			}
			if got := strings.Join(excluded, " "); got != tc.excluded {
				t.Errorf("excluded %q\nwant %q", got, tc.excluded)
			}
		})
	}
}

// TestFilterLinkedWorkTree: a root whose .git is a file ("gitdir: ...")
// is a work tree; info/exclude is read from the common directory a linked
// work tree's git directory names.
func TestFilterLinkedWorkTree(t *testing.T) {
	main := t.TempDir()
	write(t, main, ".git/info/exclude", "*.tmp\n", 0o644)
	write(t, main, ".git/worktrees/wt/commondir", "../..\n", 0o644)
	root := t.TempDir()
	write(t, root, ".git", "gitdir: "+filepath.Join(main, ".git/worktrees/wt")+"\n", 0o644)
	write(t, root, ".gitignore", "*.log\n", 0o644)
	write(t, root, "a.log", "", 0o644)
	write(t, root, "a.tmp", "", 0o644)
	kept, excluded := walked(t, root, Options{})
	if got, want := strings.Join(kept, " "), ".git .gitignore"; got != want {
		t.Errorf("kept %q, want %q", got, want)
	}
	if got, want := strings.Join(excluded, " "), "a.log:gitignore a.tmp:gitignore"; got != want {
		t.Errorf("excluded %q, want %q", got, want)
	}
}

// TestFilterHostileFiles: ignore files that are too big, symlinks, FIFOs
// or deeply nested give an error or are not read, never a hang.
func TestFilterHostileFiles(t *testing.T) {
	t.Run("huge gitignore", func(t *testing.T) {
		root := gitTree(t, map[string]string{"a": ""})
		write(t, root, "sub/.gitignore", strings.Repeat("#", maxIgnoreFileBytes+1), 0o644)
		_, err := Take(context.Background(), memstore.New(), root, Options{})
		if err == nil || !strings.Contains(err.Error(), "sub/.gitignore is larger than") {
			t.Fatalf("Take = %v, want the bound named", err)
		}
	})
	t.Run("too many rules", func(t *testing.T) {
		root := gitTree(t, nil)
		for i := 0; i < 3; i++ {
			write(t, root, filepath.Join("d", strings.Repeat("x", i+1), ".gitignore"), strings.Repeat("a\n", maxIgnoreRules/2), 0o644)
		}
		_, err := Take(context.Background(), memstore.New(), root, Options{})
		if err == nil || !strings.Contains(err.Error(), "rules are more than") {
			t.Fatalf("Take = %v, want the rule bound", err)
		}
	})
	t.Run("symlinked gitignore and looprigignore", func(t *testing.T) {
		root := gitTree(t, map[string]string{"a": "", "rules": "*\n"})
		symlink(t, root, ".gitignore", "rules")
		symlink(t, root, IgnoreFile, "rules")
		symlink(t, root, "sub/.gitignore", "../rules")
		write(t, root, "sub/b", "", 0o644)
		kept, excluded := walked(t, root, Options{})
		if got, want := strings.Join(kept, " "), ".git/HEAD .gitignore .looprigignore a rules sub/.gitignore sub/b"; got != want || excluded != nil {
			t.Errorf("kept %q, excluded %q; want %q and nothing excluded", got, excluded, want)
		}
	})
	t.Run("FIFOs", func(t *testing.T) {
		root := gitTree(t, map[string]string{"a": ""})
		for _, p := range []string{".gitignore", IgnoreFile, ".git/info/exclude", "sub/.gitignore"} {
			os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
			if err := syscall.Mkfifo(filepath.Join(root, p), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan error, 1)
		go func() {
			_, err := Take(context.Background(), memstore.New(), root, Options{})
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Take blocked on a FIFO")
		}
	})
	t.Run("gitdir whose commondir is a FIFO", func(t *testing.T) {
		root := t.TempDir()
		gitdir := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(gitdir, "commondir"), 0o644); err != nil {
			t.Fatal(err)
		}
		write(t, root, ".git", "gitdir: "+gitdir+"\n", 0o644)
		if _, err := NewFilter(root, FilterOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("deep nesting", func(t *testing.T) {
		root := gitTree(t, nil)
		rel := ""
		for i := 0; i < 150; i++ {
			rel = filepath.Join(rel, "d")
			write(t, root, filepath.Join(rel, ".gitignore"), "!keep\n*.o\n", 0o644)
		}
		write(t, root, filepath.Join(rel, "x.o"), "", 0o644)
		write(t, root, filepath.Join(rel, "keep"), "", 0o644)
		s, err := walk(context.Background(), root, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.excluded) != 1 || !strings.HasSuffix(s.excluded[0].Path, "/x.o") {
			t.Errorf("excluded %v, want the deepest x.o", s.excluded)
		}
	})
}

// TestFilterBadPatterns: a malformed pattern of a profile or a
// .looprigignore is an error naming it; one of a .gitignore is dropped,
// as git drops it.
func TestFilterBadPatterns(t *testing.T) {
	if _, err := NewFilter(t.TempDir(), FilterOptions{Include: []string{"ok", "[bad"}}); err == nil || !strings.Contains(err.Error(), `Options.Include line 2 "[bad"`) {
		t.Errorf("include: %v", err)
	}
	if _, err := NewFilter(t.TempDir(), FilterOptions{Exclude: []string{`bad\`}}); err == nil || !strings.Contains(err.Error(), "Options.Exclude line 1") {
		t.Errorf("exclude: %v", err)
	}
	root := t.TempDir()
	write(t, root, IgnoreFile, "a\n[[:nope:]]\n", 0o644)
	if _, err := NewFilter(root, FilterOptions{}); err == nil || !strings.Contains(err.Error(), ".looprigignore line 2") {
		t.Errorf(".looprigignore: %v", err)
	}
	root = gitTree(t, map[string]string{".gitignore": "[bad\n*.o\n", "a.o": "", "[bad": ""})
	kept, excluded := walked(t, root, Options{})
	if got, want := strings.Join(kept, " "), ".git/HEAD .gitignore [bad"; got != want || len(excluded) != 1 {
		t.Errorf("kept %q, excluded %q; want %q and a.o", got, excluded, want)
	}
}

// TestFilterOutOfOrder: Excluded answers for a path below an excluded or
// included directory also when asked before the directory.
func TestFilterOutOfOrder(t *testing.T) {
	root := gitTree(t, map[string]string{".gitignore": "build/\n"})
	f, err := NewFilter(root, FilterOptions{Include: []string{"keep/"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Enter(""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    string
		ex   bool
		why  ExcludeReason
		name string
	}{
		{"build/a/b.c", true, ExcludeGitignore, "below a gitignored directory"},
		{"keep/.ssh/id_rsa", false, "", "below an included directory"},
		{"x/.aws/y/z", true, ExcludeSecret, "below a secret directory"},
		{"x/y/z", false, "", "plain"},
	} {
		for i := 0; i < 2; i++ {
			if ex, why := f.Excluded(c.p, false); ex != c.ex || why != c.why {
				t.Errorf("%s: Excluded(%q) = %v, %q", c.name, c.p, ex, why)
			}
		}
	}
}

func BenchmarkFilterExcluded(b *testing.B) {
	root := benchRepo(b)
	f, err := NewFilter(root, FilterOptions{Exclude: []string{"node_modules/", "*.o"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range []string{"", "src", "src/pkg"} {
		if err := f.Enter(d); err != nil {
			b.Fatal(err)
		}
	}
	paths := []string{"src/pkg/main.go", "src/pkg/util_test.go", "README.md", "src/pkg/data.json", "src/x.log"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Excluded(paths[i%len(paths)], false)
	}
}

// benchRepo is a git work tree with a typical .gitignore.
func benchRepo(b *testing.B) string {
	root := b.TempDir()
	write(b, root, ".git/HEAD", "", 0o644)
	write(b, root, ".gitignore", "# build\n/bin/\n*.log\n*.tmp\n.DS_Store\nnode_modules/\ncoverage/\ndist/\n*.swp\n.idea/\n.vscode/\n!.vscode/settings.json\n", 0o644)
	write(b, root, "src/.gitignore", "generated/\n", 0o644)
	return root
}

// TestFilterAgreesWithGit walks random work trees with random .gitignore
// files (and .git/info/exclude) and checks that the walk keeps exactly
// the files git reports as untracked and not ignored (git ls-files
// --others --exclude-standard). It needs the git program.
func TestFilterAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git program")
	}
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(home, "none"))
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return string(out)
	}
	names := []string{"a", "b", "x", "x.log", "keep.log", "build", "doc", "a.md", "1x", "bx", "foo", "bar", "#x", "!x", "sp ace", "[x", "z.o", "é"}
	patterns := []string{
		"*.log", "!keep.log", "build/", "/build", "doc/*.md", "!doc/", "a/**", "!a/x", "**/b", "a/**/b", "**/a/b",
		"[!a]x", "[^b]x", "[[:digit:]]x", "[[:alpha:]]", "x?", `\#x`, `\!x`, "#x", "b", "!b/", "*", "!*/", "foo/bar",
		"**/foo/**", "*.o", "!*.o", "/a/b", "doc", "?", "[a-c]", "[]a]", "a/*/b", "**", "!**/", `sp\ ace`, "sp ace   ",
		"#comment", "", "f[o]o", "a/", "*/", "!a/b/", "!x", "x/**/x", "*x*", "b*", "[", `x\`, "?.?", "é", "**/", "!bar",
	}
	pick := func(rng *rand.Rand, from []string) string { return from[rng.Intn(len(from))] }
	for trial := 0; trial < 150; trial++ {
		rng := rand.New(rand.NewSource(int64(trial)))
		root := t.TempDir()
		git(root, "init", "-q")
		var dirs []string
		for k := 0; k < 25; k++ {
			var elems []string
			for d := rng.Intn(4); d >= 0; d-- {
				elems = append(elems, pick(rng, names))
			}
			p := filepath.Join(root, filepath.Join(elems...))
			if os.MkdirAll(filepath.Dir(p), 0o755) != nil {
				continue // a file is where a directory would be
			}
			if _, err := os.Stat(p); err == nil {
				continue
			}
			os.WriteFile(p, nil, 0o644)
			if len(elems) > 1 {
				dirs = append(dirs, filepath.Join(elems[:len(elems)-1]...))
			}
		}
		ignoreFiles := []string{".gitignore", ".git/info/exclude"}
		for k := 0; k < 3 && len(dirs) > 0; k++ {
			ignoreFiles = append(ignoreFiles, filepath.Join(pick(rng, dirs), ".gitignore"))
		}
		var rules []string
		for _, f := range ignoreFiles {
			var lines []string
			for n := rng.Intn(6); n >= 0; n-- {
				lines = append(lines, pick(rng, patterns))
			}
			content := strings.Join(lines, "\n") + "\n"
			os.WriteFile(filepath.Join(root, f), []byte(content), 0o644)
			rules = append(rules, f+": "+strings.Join(lines, " | "))
		}
		want := strings.Split(strings.TrimSuffix(git(root, "ls-files", "-z", "--others", "--exclude-standard"), "\x00"), "\x00")
		s, err := walk(context.Background(), root, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range s.manifest().Entries {
			if e.Kind == File && !strings.HasPrefix(e.Path, ".git/") {
				got = append(got, e.Path)
			}
		}
		sort.Strings(want)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("trial %d: the walk keeps\n  %q\ngit keeps\n  %q\nrules:\n  %s", trial, got, want, strings.Join(rules, "\n  "))
		}
	}
}

// excludedParent reports whether a directory rel lies in is excluded.
func excludedParent(f *Filter, rel string) bool {
	for i := 1; i < len(rel); i++ {
		if rel[i] == '/' {
			if ex, _ := f.Excluded(rel[:i], true); ex {
				return true
			}
		}
	}
	return false
}

// FuzzFilterExcluded feeds Filter any .gitignore, checkpoint_exclude,
// checkpoint_include and path: no panic, no hang, the same answer twice,
// a reason exactly when excluded, and a path a default excludes stays
// excluded as a secret whatever the .gitignore and checkpoint_exclude say.
func FuzzFilterExcluded(f *testing.F) {
	f.Add("*.log\n!keep.log\nbuild/\n", "a/**/b\n", "", "sub/keep.log", false)
	f.Add("!.env\n!*.pem\n", "!id_rsa\n", "", "x/.env", false)
	f.Add("**/**/**/**/a/**/b\n[[:alpha:]][!x]*\n", "", "build/\n", "a/a/a/a/a/b", true)
	f.Add("[\n\\\n[[:bogus:]]\n", "[a-", ".ssh/", ".ssh/id_rsa", false)
	f.Add("*a*a*a*a*a*a*b\n", "", "", strings.Repeat("a", 200), false)
	root := f.TempDir() // a git work tree with no ignore files: the fuzzed .gitignore is added as Enter would
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		f.Fatal(err)
	}
	empty := f.TempDir()
	f.Fuzz(func(t *testing.T, gitignore, exclude, include, p string, isDir bool) {
		if len(gitignore)+len(exclude)+len(include)+len(p) > 1<<14 {
			return
		}
		lines := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, "\n")
		}
		flt, err := NewFilter(root, FilterOptions{Exclude: lines(exclude), Include: lines(include)})
		if err != nil {
			return // a malformed profile pattern
		}
		if err := flt.addGitignore("", []byte(gitignore)); err != nil {
			t.Fatal(err)
		}
		ex, why := flt.Excluded(p, isDir)
		if ex2, why2 := flt.Excluded(p, isDir); ex2 != ex || why2 != why {
			t.Fatalf("Excluded(%q) = %v %q, then %v %q", p, ex, why, ex2, why2)
		}
		if ex != (why != "") {
			t.Fatalf("Excluded(%q) = %v with reason %q", p, ex, why)
		}
		if include != "" {
			return
		}
		plain, err := NewFilter(empty, FilterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pex, pwhy := plain.Excluded(p, isDir)
		if !pex || pwhy != ExcludeSecret || why == ExcludeSecret {
			return
		}
		// A default excludes it: it stays excluded, as a secret, unless a
		// directory it lies in is excluded whole (the walk never enters
		// it), which is then the reason.
		if !ex || !excludedParent(flt, p) {
			t.Fatalf("Excluded(%q) = %v %q, but a default excludes it", p, ex, why)
		}
	})
}
