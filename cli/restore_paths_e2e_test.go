package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/uuid"
)

// restoreFailure is what a path says of a failed restore.
type restoreFailure struct {
	Code    int
	Type    string `json:"type"`
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
	Human   string // the error's words for people (stderr)
}

// Every restore error a person can run into gives the same type, kind,
// message and hint whether the restore runs in this process (`restore`),
// in a host (`restore --detach`) or among all crashed sessions (`restore
// --all-crashed`, which exits 3 when any failed); `restore` and `restore
// --detach` also exit the same; nothing panics.
func TestRestoreErrorsEveryPath(t *testing.T) {
	type setup func(h *harness) (id string)
	crashed := func(h *harness, args ...string) string {
		h.t.Helper()
		id, pid := h.detached(args...)
		syscall.Kill(pid, syscall.SIGKILL)
		h.waitState(id, "crashed")
		return id
	}
	cases := []struct {
		name      string
		kind      string
		allPaths  bool // the session is crashed: --all-crashed tries it too
		setup     setup
		humanWant string
	}{
		{"no such session", "discovery_failed", false, func(h *harness) string {
			h.newSession()
			return uuid.NewString()
		}, "has no journal in this store"},
		{"held by a live host", "lease_failed", false, func(h *harness) string {
			id, _ := h.detached()
			return id
		}, "is live in host pid"},
		{"held by restore --hold", "lease_failed", false, func(h *harness) string {
			id := h.newSession()
			h.start("restore", id, "--hold").waitLine(h.t, "holding session")
			return id
		}, "held by pid"},
		{"workspace gone", "materialize_failed", true, func(h *harness) string {
			id := crashed(h)
			if err := os.RemoveAll(filepath.Join(h.store, "workspaces", id)); err != nil {
				h.t.Fatal(err)
			}
			return id
		}, "cannot be restored (materialize_failed)"},
		{"profile gone", "unknown_profile", true, func(h *harness) string {
			h.writeConfig("[profiles.work]\n")
			id := crashed(h, "--rig", "work")
			h.writeConfig("")
			return id
		}, `profile "work"`},
		{"drift refused", "config_rejected", true, func(h *harness) string {
			h.writeConfig("[profiles.work]\n")
			id := crashed(h, "--rig", "work")
			h.writeConfig("[profiles.work]\nengine = \"demo\"\n")
			return id
		}, "configuration drifted"},
		{"root busy", "lease_failed", true, func(h *harness) string {
			root := filepath.Join(h.home, "root")
			if err := os.MkdirAll(root, 0o700); err != nil {
				h.t.Fatal(err)
			}
			h.writeConfig("[profiles.ex]\nplacement = \"exclusive\"\nroot = \"" + root + "\"\n")
			id := crashed(h, "--rig", "ex")
			h.detached("--rig", "ex") // now holds the root
			return id
		}, "workspace root"},
		{"journal damaged", "replay_failed", true, func(h *harness) string {
			id := crashed(h)
			ledger := filepath.Join(h.store, "ledgers", "sessions", id+".log")
			b, err := os.ReadFile(ledger)
			if err != nil {
				h.t.Fatal(err)
			}
			b[len(b)/3] ^= 0xff // a frame in the middle: damage, not a torn tail
			if err := os.WriteFile(ledger, b, 0o600); err != nil {
				h.t.Fatal(err)
			}
			return id
		}, "cannot be restored (replay_failed)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			got := map[string]restoreFailure{}
			paths := []string{"restore", "restore --detach"}
			if c.allPaths {
				paths = append(paths, "restore --all-crashed")
			}
			// Each path on a fresh store (a restore may change it), in
			// parallel; the comparison once all are done.
			t.Cleanup(func() {
				want, ok := got["restore"]
				if !ok || len(got) != len(paths) {
					return // a path failed already
				}
				if want.Kind != c.kind || want.Code == 0 || !strings.Contains(want.Human, c.humanWant) {
					t.Errorf("restore: %+v; want kind %s, words %q", want, c.kind, c.humanWant)
				}
				for path, g := range got {
					if g.Type != want.Type || g.Kind != want.Kind || g.Message != want.Message || g.Hint != want.Hint {
						t.Errorf("%s: %s %s %q (hint %q)\nrestore: %s %s %q (hint %q)", path, g.Type, g.Kind, g.Message, g.Hint,
							want.Type, want.Kind, want.Message, want.Hint)
					}
					switch {
					case path == "restore --all-crashed" && g.Code != 3:
						t.Errorf("%s exited %d, want 3 (one failed)", path, g.Code)
					case path != "restore --all-crashed" && g.Code != want.Code:
						t.Errorf("%s exited %d, restore %d", path, g.Code, want.Code)
					}
					if strings.Contains(g.Human, "panic") || strings.Contains(g.Human, "goroutine ") {
						t.Errorf("%s panicked:\n%s", path, g.Human)
					}
				}
			})
			for _, path := range paths {
				t.Run(path, func(t *testing.T) {
					h := newHarness(t)
					id := c.setup(h)
					f := restoreThrough(h, path, id)
					mu.Lock()
					got[path] = f
					mu.Unlock()
				})
			}
		})
	}
}

// restoreThrough restores session id through path and returns what it
// said: its JSON error (for --all-crashed, id's line), exit code, and
// its words for people from a second run without --json. The second run
// is on the same store: a failed restore changed nothing a person would
// not see again.
func restoreThrough(h *harness, path, id string) restoreFailure {
	h.t.Helper()
	args := strings.Fields(path)
	if path != "restore --all-crashed" {
		args = append(args, id)
	}
	r := h.run(append(args, "--json")...)
	var f restoreFailure
	if path == "restore --all-crashed" {
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var line struct {
				ID    string          `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			if json.Unmarshal([]byte(l), &line) == nil && line.ID == id && line.Error != nil {
				if err := json.Unmarshal(line.Error, &f); err != nil {
					h.t.Fatalf("%s: %s", path, l)
				}
			}
		}
	} else {
		var e struct {
			Error restoreFailure `json:"error"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
			h.t.Fatalf("%s --json: exit %d, stdout %q, stderr %q", path, r.code, r.stdout, r.stderr)
		}
		f = e.Error
	}
	f.Code = r.code
	f.Human = h.run(args...).stderr + r.stderr
	// What differs from store to store: the session's id, the store's
	// paths, pids, offsets in a journal.
	for _, field := range []*string{&f.Message, &f.Hint, &f.Human} {
		*field = normalize(*field, h, id)
	}
	return f
}

var (
	pidAt  = regexp.MustCompile(`pid \d+`)
	byteAt = regexp.MustCompile(`byte \d+`) // journals differ in length by their timestamps
)

func normalize(s string, h *harness, id string) string {
	for _, r := range []struct{ from, to string }{{h.store, "<store>"}, {h.home, "<home>"}, {h.runtime, "<runtime>"}, {id, "<id>"}, {id[:8], "<id>"}} {
		s = strings.ReplaceAll(s, r.from, r.to)
	}
	return byteAt.ReplaceAllString(pidAt.ReplaceAllString(s, "pid N"), "byte N")
}
