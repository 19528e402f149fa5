package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ExcludeReason says why a path is left out of a checkpoint.
type ExcludeReason string

// The reasons a path is excluded: the source of the rule that decided.
const (
	ExcludeSecret    ExcludeReason = "secret"        // DefaultExcludes
	ExcludeGitignore ExcludeReason = "gitignore"     // a .gitignore or .git/info/exclude of a git work tree
	ExcludeIgnore    ExcludeReason = "looprigignore" // the root's .looprigignore
	ExcludeProfile   ExcludeReason = "profile"       // checkpoint_exclude
)

// DefaultExcludes are the patterns (gitignore syntax) every checkpoint
// leaves out: what a user would never want copied to another machine or
// kept in the store. Each matches at any depth. Only a profile's
// checkpoint_include (FilterOptions.Include) takes one back: a negation
// in a workspace's .gitignore or .looprigignore, which a cloned
// repository brings, does not.
//
//   - environment files: .env and .env.* (they hold API keys and database
//     passwords by convention), but not the templates projects commit
//     (.env.example, .env.sample, .env.template, .env.dist); and direnv's
//     .envrc, which exports the same secrets into the shell.
//   - private keys: ssh's id_rsa, id_dsa, id_ecdsa and id_ed25519 with
//     any suffix (id_ed25519_sk, id_rsa_work, ...) but not the public
//     *.pub (id_rsa.pub, id_rsa-cert.pub); key and certificate stores:
//     *.pem, *.key, *.p12, *.pfx, *.p8 (Apple's and others' PKCS #8
//     keys), *.ppk (PuTTY), *.jks and *.keystore (Java), *.keytab
//     (Kerberos).
//   - credential directories of a home: .ssh/, .aws/, .gnupg/, .azure/,
//     .config/gcloud/.
//   - credential files: .kube/config, .docker/config.json, .netrc,
//     _netrc, .git-credentials and .config/git/credentials (git's
//     credential store), .npmrc, .pypirc, .pgpass, .my.cnf (MySQL's
//     password), .vault-token, .config/gh/hosts.yml (the GitHub CLI's
//     token), .cargo/credentials and .cargo/credentials.toml, and the
//     logins of the agents looprig runs: .claude/.credentials.json and
//     .codex/auth.json.
//   - git's configuration: .git/config, and a submodule's in
//     .git/modules/ (a remote's URL can carry a token), but not the refs
//     and logs there, which a branch named "config" would be.
var DefaultExcludes = []string{
	".env",
	".env.*",
	"!.env.example",
	"!.env.sample",
	"!.env.template",
	"!.env.dist",
	".envrc",
	"id_rsa*",
	"id_dsa*",
	"id_ecdsa*",
	"id_ed25519*",
	"!id_*.pub",
	"*.pem",
	"*.key",
	"*.p12",
	"*.pfx",
	"*.p8",
	"*.ppk",
	"*.jks",
	"*.keystore",
	"*.keytab",
	".ssh/",
	".aws/",
	".gnupg/",
	".azure/",
	"**/.config/gcloud/",
	"**/.kube/config",
	"**/.docker/config.json",
	".netrc",
	"_netrc",
	".git-credentials",
	"**/.config/git/credentials",
	".npmrc",
	".pypirc",
	".pgpass",
	".my.cnf",
	".vault-token",
	"**/.config/gh/hosts.yml",
	"**/.cargo/credentials",
	"**/.cargo/credentials.toml",
	"**/.claude/.credentials.json",
	"**/.codex/auth.json",
	"**/.git/config",
	"**/.git/modules/**/config",
	"!**/.git/modules/**/refs/**",
	"!**/.git/modules/**/logs/**",
}

// FilterOptions are a profile's rules for a Filter.
type FilterOptions struct {
	Exclude []string // checkpoint_exclude (gitignore syntax), after everything else
	Include []string // checkpoint_include: takes back what any rule above excluded (gitignore syntax; a directory pattern takes the directory back whole)
}

// Bounds of what a Filter reads: each ignore file (.looprigignore,
// .gitignore, info/exclude) is at most maxIgnoreFileBytes (more is an
// error), and all of a walk's rules at most maxIgnoreRules.
const (
	maxIgnoreFileBytes = 1 << 20
	maxIgnoreRules     = 100_000
	maxGitFileBytes    = 4 << 10 // a ".git" file ("gitdir: ...") and a commondir file
)

// gitignoreFile is the name of git's per-directory ignore file.
const gitignoreFile = ".gitignore"

// Filter decides which paths of a workspace a checkpoint leaves out, and
// why. The rules, by precedence:
//
//  1. opts.Include: a path it matches, or that lies in a directory it
//     matches, is kept whatever the rules below say.
//  2. DefaultExcludes (ExcludeSecret).
//  3. opts.Exclude (ExcludeProfile), then the root's .looprigignore
//     (ExcludeIgnore), then, when the root is a git work tree, its
//     .gitignore files, deepest first, and .git/info/exclude
//     (ExcludeGitignore): the first of these sources with a rule that
//     matches decides, by its last matching rule, so a negation takes
//     back what a source after it excluded (git's precedence, extended).
//     The gitignore rules do not apply to .git directories and their
//     contents (git never ignores them).
//
// A path below an excluded directory is excluded with it (the walk does
// not enter it). A Filter is used by one walk at a time.
type Filter struct {
	root    string
	git     bool    // root is a git work tree
	include ruleSet // opts.Include
	secret  ruleSet // DefaultExcludes
	project ruleSet // .looprigignore, then opts.Exclude
	info    ruleSet // .git/info/exclude
	nested  map[string]*ruleSet
	dirs    map[string]dirState
	nrules  int
}

// dirState is what a Filter knows of a directory.
type dirState struct {
	decided  bool // Excluded has decided it
	excluded bool
	reason   ExcludeReason
	included bool // opts.Include takes it back, whole
	entered  bool
}

// NewFilter compiles the rules for the workspace at root: DefaultExcludes,
// then (when root is a git work tree: root/.git is a directory or a
// gitdir file) .git/info/exclude (Enter reads the .gitignore files), then
// root/.looprigignore, then opts.Exclude; opts.Include last. A malformed
// pattern of .looprigignore or opts is an error naming its line; one of a
// git file is dropped, as git drops it. An ignore file that is a symlink
// or not a regular file is not read.
func NewFilter(root string, opts FilterOptions) (*Filter, error) {
	f := &Filter{root: root, nested: make(map[string]*ruleSet), dirs: make(map[string]dirState)}
	secret, err := parseRules(DefaultExcludes, "DefaultExcludes", ExcludeSecret, true)
	if err != nil {
		return nil, err
	}
	f.secret = newRuleSet(secret)
	gitDir, err := findGitDir(root)
	if err != nil {
		return nil, err
	}
	if gitDir != "" {
		f.git = true
		b, err := readIgnoreFile(filepath.Join(gitDir, "info", "exclude"))
		if err != nil {
			return nil, err
		}
		info, err := f.parse(b, "", ExcludeGitignore, false)
		if err != nil {
			return nil, err
		}
		f.info = newRuleSet(info)
	}
	b, err := readIgnoreFile(filepath.Join(root, IgnoreFile))
	if err != nil {
		return nil, err
	}
	project, err := f.parse(b, IgnoreFile, ExcludeIgnore, true)
	if err != nil {
		return nil, err
	}
	exclude, err := parseRules(opts.Exclude, "Options.Exclude", ExcludeProfile, true)
	if err != nil {
		return nil, err
	}
	f.project = newRuleSet(append(project, exclude...))
	include, err := parseRules(opts.Include, "Options.Include", "", true)
	if err != nil {
		return nil, err
	}
	f.include = newRuleSet(include)
	if err := f.count(len(exclude) + len(include)); err != nil {
		return nil, err
	}
	return f, nil
}

// parse compiles an ignore file's content, counting its rules.
func (f *Filter) parse(b []byte, source string, why ExcludeReason, strict bool) ([]rule, error) {
	if len(b) == 0 {
		return nil, nil
	}
	s := strings.TrimPrefix(string(b), "\ufeff") // git skips a UTF-8 BOM
	rules, err := parseRules(strings.Split(s, "\n"), source, why, strict)
	if err != nil {
		return nil, err
	}
	return rules, f.count(len(rules))
}

func (f *Filter) count(n int) error {
	f.nrules += n
	if f.nrules > maxIgnoreRules {
		return fmt.Errorf("checkpoint: the workspace's ignore rules are more than %d", maxIgnoreRules)
	}
	return nil
}

// Enter tells the filter the walk is entering directory rel ("" for the
// root; slash-separated, relative to root): in a git work tree it reads
// rel/.gitignore (bounded size, regular file only, never following a
// symlink) so that it applies below rel. The walk calls it for every
// directory it enters, parents first.
func (f *Filter) Enter(rel string) error {
	if !f.git || inGitDir(rel) {
		return nil
	}
	st := f.dirs[rel]
	if st.entered {
		return nil
	}
	st.entered = true
	f.dirs[rel] = st
	b, err := readIgnoreFile(filepath.Join(f.root, filepath.FromSlash(rel), gitignoreFile))
	if err != nil {
		return err
	}
	return f.addGitignore(rel, b)
}

// addGitignore compiles b, the content of rel/.gitignore.
func (f *Filter) addGitignore(rel string, b []byte) error {
	rules, err := f.parse(b, "", ExcludeGitignore, false)
	if err != nil {
		return err
	}
	if len(rules) > 0 {
		set := newRuleSet(rules)
		f.nested[rel] = &set
	}
	return nil
}

// Excluded reports whether the path rel (slash-separated, relative to
// root) is left out, and why (the rule that decided). isDir says whether
// it names a directory.
func (f *Filter) Excluded(rel string, isDir bool) (bool, ExcludeReason) {
	if rel == "" {
		return false, "" // the root
	}
	elems := strings.Split(rel, "/")
	if len(elems) > 1 {
		p, ok := f.dirs[rel[:len(rel)-len(elems[len(elems)-1])-1]]
		if !ok || !p.decided {
			p = f.decideParents(rel, elems)
		}
		if p.excluded || p.included {
			if isDir {
				f.remember(rel, p.excluded, p.reason, p.included)
			}
			return p.excluded, p.reason
		}
	}
	excluded, why, included := f.decide(rel, elems, isDir)
	if isDir {
		f.remember(rel, excluded, why, included)
	}
	return excluded, why
}

// decideParents decides the directories rel lies in that the walk did
// not ask about, from the top, and returns the state of rel's parent.
func (f *Filter) decideParents(rel string, elems []string) dirState {
	var st dirState // the root's: nothing decided against it
	end := -1
	for k := 1; k < len(elems); k++ {
		end += len(elems[k-1]) + 1
		dir := rel[:end]
		if dir == "" {
			continue // the root (rel starts with "/"): never excluded
		}
		if d := f.dirs[dir]; d.decided {
			st = d
			continue
		}
		if !st.excluded && !st.included {
			st.excluded, st.reason, st.included = f.decide(dir, elems[:k], true)
		}
		f.remember(dir, st.excluded, st.reason, st.included)
		st = f.dirs[dir]
	}
	return st
}

func (f *Filter) remember(rel string, excluded bool, why ExcludeReason, included bool) {
	st := f.dirs[rel]
	st.decided, st.excluded, st.reason, st.included = true, excluded, why, included
	f.dirs[rel] = st
}

// decide applies the rules to rel, split into elems, whose parent is
// neither excluded nor taken back whole.
func (f *Filter) decide(rel string, elems []string, isDir bool) (excluded bool, why ExcludeReason, included bool) {
	if f.include.excludes(elems, isDir) { // "excludes": takes back
		return false, "", true
	}
	if f.secret.excludes(elems, isDir) {
		return true, ExcludeSecret, false
	}
	if r := f.project.last(elems, isDir); r != nil {
		return !r.negate, reasonOf(r), false
	}
	if !f.git || inGitDir(rel) {
		return false, "", false
	}
	// The .gitignore files of rel's directories, deepest first: each
	// matches the path relative to its directory.
	end := len(rel)
	for k := len(elems) - 1; k >= 0; k-- {
		end = strings.LastIndexByte(rel[:end], '/') // rel[:end] is elems[:k]
		dir := ""
		if end > 0 {
			dir = rel[:end]
		}
		end = max(end, 0)
		if rules, ok := f.nested[dir]; ok {
			if r := rules.last(elems[k:], isDir); r != nil {
				return !r.negate, reasonOf(r), false
			}
		}
	}
	if r := f.info.last(elems, isDir); r != nil {
		return !r.negate, reasonOf(r), false
	}
	return false, "", false
}

// reasonOf is r's reason when it excludes.
func reasonOf(r *rule) ExcludeReason {
	if r.negate {
		return ""
	}
	return r.source
}

// inGitDir reports whether rel is a .git directory or lies in one.
func inGitDir(rel string) bool {
	for rel != "" {
		el := rel
		if i := strings.IndexByte(rel, '/'); i >= 0 {
			el, rel = rel[:i], rel[i+1:]
		} else {
			rel = ""
		}
		if el == ".git" {
			return true
		}
	}
	return false
}

// findGitDir returns the git directory of the work tree at root: root/.git
// when it is a directory, the directory a root/.git file names ("gitdir:
// PATH") or, for a linked work tree, the common directory it names
// (PATH/commondir), where info/exclude is; "" when root is not a work tree.
func findGitDir(root string) (string, error) {
	dotGit := filepath.Join(root, ".git")
	fi, err := os.Lstat(dotGit)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("checkpoint: %w", err)
	case fi.IsDir():
		return dotGit, nil
	case !fi.Mode().IsRegular():
		return "", nil
	}
	b, err := readBounded(dotGit, maxGitFileBytes)
	if err != nil || b == nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	dir = strings.TrimSpace(dir)
	if !ok || dir == "" {
		return "", nil
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	common, err := readBounded(filepath.Join(dir, "commondir"), maxGitFileBytes)
	if err != nil {
		return "", err
	}
	if c := strings.TrimSpace(string(common)); c != "" {
		if !filepath.IsAbs(c) {
			c = filepath.Join(dir, c)
		}
		return c, nil
	}
	return dir, nil
}

// readIgnoreFile reads an ignore file (see readBounded) of at most
// maxIgnoreFileBytes.
func readIgnoreFile(p string) ([]byte, error) {
	return readBounded(p, maxIgnoreFileBytes)
}

// readBounded reads the file at p when it is a regular file, without
// following a symlink at p and without blocking (it is opened only when
// Lstat says it is a regular file, non-blocking, and checked again once
// open): nil when it does not exist, is a symlink or is anything but a
// regular file. More than limit bytes is an error naming it.
func readBounded(p string, limit int64) ([]byte, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil
	}
	fd, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
		return nil, nil // replaced since Lstat
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer fd.Close()
	if fi, err = fd.Stat(); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("checkpoint: %s is larger than %d bytes", p, limit)
	}
	b, err := io.ReadAll(io.LimitReader(fd, limit+1))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read %s: %w", p, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("checkpoint: %s is larger than %d bytes", p, limit)
	}
	return b, nil
}
