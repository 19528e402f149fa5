package cli_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The secrets of a workspace stay on its machine: a turn makes .env, an
// ssh private key, .git/config with a token and a .gitignore'd build/;
// no file of the store (blobs, journal, anything) holds their content;
// diff names them as excluded, never their content; rm then leaves no
// blob of the session behind.
func TestSecretsStayOnTheMachine(t *testing.T) {
	h := newHarness(t)
	id, _, _ := h.detachedIn()
	secrets := []string{"DATABASE_PASSWORD=hunter2-e2e", "PRIVATE-KEY-e2e-ed25519", "https://user:ghp_tokene2e@github.com/x/y", "built-artifact-e2e"}
	// The turn's input is journaled: it spells each secret in pieces the
	// shell joins, so that only the files hold them whole.
	h.must(0, "run", id, "--", `mkdir -p .git build src && printf 'ref: refs/heads/main\n' > .git/HEAD &&
printf '[remote "origin"]\n\turl = https://user:ghp_''tokene2e@github.com/x/y\n' > .git/config &&
printf 'DATABASE_PASSWORD=hunter2''-e2e\n' > .env && printf 'PRIVATE-KEY''-e2e-ed25519\n' > id_ed25519 &&
printf 'build/\n' > .gitignore && printf 'built-artifact''-e2e\n' > build/out.bin && printf 'package main\n' > src/main.go`)
	h.waitLog(id, "SessionIdle") // the turn's checkpoint is on record

	grepStore := func() []string {
		var hits []string
		filepath.WalkDir(h.store, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() || strings.Contains(p, string(filepath.Separator)+"workspaces"+string(filepath.Separator)) {
				return nil // the workspaces are the machine's, not the store's
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			for _, s := range secrets {
				if bytes.Contains(b, []byte(s)) {
					hits = append(hits, p+": "+s)
				}
			}
			return nil
		})
		return hits
	}
	if hits := grepStore(); len(hits) > 0 {
		t.Errorf("secrets in the store:\n%s", strings.Join(hits, "\n"))
	}
	r := h.must(0, "diff", id, "--stat")
	if !strings.Contains(r.stdout, "excluded (never stored") || !strings.Contains(r.stdout, ".env") ||
		!strings.Contains(r.stdout, ".git/config") || !strings.Contains(r.stdout, "build/") || !strings.Contains(r.stdout, "id_ed25519") {
		t.Errorf("diff --stat does not name the excluded paths:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "src/main.go") || !strings.Contains(r.stdout, ".gitignore") {
		t.Errorf("diff --stat does not list the files kept:\n%s", r.stdout)
	}
	r = h.must(0, "diff", id)
	for _, s := range secrets {
		if strings.Contains(r.stdout, s) {
			t.Errorf("diff shows %q:\n%s", s, r.stdout)
		}
	}

	h.must(0, "stop", id)
	r = h.must(0, "rm", id, "--yes")
	if !strings.Contains(r.stdout, "of its checkpoints and transcripts") {
		t.Errorf("rm does not say what it freed:\n%s", r.stdout)
	}
	var left []string
	filepath.WalkDir(filepath.Join(h.store, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.Contains(p, string(filepath.Separator)+"tmp"+string(filepath.Separator)) {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("rm left %d blobs of the only session:\n%s", len(left), strings.Join(left, "\n"))
	}
}
