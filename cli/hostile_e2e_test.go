package cli_test

// Hostile inputs at the command line: damaged lease epoch files, a store of
// another format or owner, session ids that try to leave the store, and
// session text (titles, command output) carrying terminal escapes. Each
// gives a clear typed error (or is shown inertly) and loses nothing.

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// inert fails if s holds anything a terminal would act on: C0 controls
// other than newline and tab, DEL, C1 controls, bidi controls, or bytes
// that are not UTF-8.
func inert(t *testing.T, what, s string) {
	t.Helper()
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			t.Errorf("%s: invalid UTF-8 at byte %d: %q", what, i, s)
			return
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			t.Errorf("%s: raw control %U at byte %d: %q", what, r, i, s)
			return
		case (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c:
			t.Errorf("%s: raw bidi control %U at byte %d: %q", what, r, i, s)
			return
		}
		i += n
	}
}

func epochPath(h *harness, id string) string {
	return filepath.Join(h.store, "leases", "sessions", id+".epoch")
}

// A garbage or huge lease epoch file: `ls` still lists every session (the
// damaged one with its reason, the others without), `restore` fails with a
// typed error that names the file and says how to repair it, the file is
// never reset, the journal stays readable and the other sessions work.
func TestHostileEpochFiles(t *testing.T) {
	h := newHarness(t)
	garbage := h.newSession("--title", "garbage epoch")
	huge := h.newSession("--title", "huge epoch")
	good := h.newSession("--title", "good")
	files := map[string][]byte{
		garbage: []byte("\x00\x01{\"epoch\": not json"),
		huge:    []byte(`{"epoch":2,"host":"` + strings.Repeat("x", 64<<10) + `"}`),
	}
	for id, b := range files {
		if err := os.WriteFile(epochPath(h, id), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	rows := h.ls()
	if len(rows) != 3 {
		t.Fatalf("ls lists %d sessions, want 3: %+v", len(rows), rows)
	}
	for _, r := range rows {
		switch r.ID {
		case garbage, huge:
			if r.State == "broken" || !strings.Contains(r.Reason, "lease state unknown") || !strings.Contains(r.Reason, r.ID+".epoch") {
				t.Errorf("ls row of %s: state %s, reason %q; want its own epoch file named", r.ID, r.State, r.Reason)
			}
		case good:
			if r.State != "idle" || r.Reason != "" {
				t.Errorf("ls row of the healthy session: state %s, reason %q", r.State, r.Reason)
			}
		}
	}
	out := h.must(0, "ls").stdout
	inert(t, "ls", out)
	if !strings.Contains(out, garbage[:8]+" idle: lease state unknown") {
		t.Errorf("ls does not explain the damaged epoch file:\n%s", out)
	}

	for id := range files {
		r := h.must(3, "restore", id)
		for _, want := range []string{"lease epoch file is unreadable", id + ".epoch", "never resets a lease epoch", "log " + id[:8]} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("restore with a damaged epoch file: stderr %q lacks %q", r.stderr, want)
			}
		}
		inert(t, "restore stderr", r.stderr)
		e := decode[struct {
			Error struct {
				Type, Kind, Message, Path string
				CauseType                 string `json:"cause_type"`
			} `json:"error"`
		}](t, h.run("restore", id, "--json").stdout)
		if e.Error.Type != "RestoreError" || e.Error.Kind != "lease_failed" || e.Error.CauseType != "CorruptError" || e.Error.Path != epochPath(h, id) {
			t.Errorf("restore --json with a damaged epoch file: %+v", e.Error)
		}
		if b, _ := os.ReadFile(epochPath(h, id)); string(b) != string(files[id]) {
			t.Errorf("the damaged epoch file of %s was rewritten", id)
		}
		if recs := h.log(id); len(recs) == 0 || recs[0].Type != "fence" {
			t.Errorf("log of %s: %v", id, types(recs))
		}
		if r := h.run("lease", "break", id, "--yes"); r.code != 1 || !strings.Contains(r.stderr, "never resets a lease epoch") {
			t.Errorf("lease break with a damaged epoch file: exit %d, %s", r.code, r.stderr)
		}
	}
	h.must(0, "run", good, "--", "true")
}

// A store of an unknown FORMAT, or a directory that is no store, is refused
// with a StoreError naming what was found; nothing in it is changed.
func TestHostileStoreFormat(t *testing.T) {
	h := newHarness(t)
	h.newSession()
	format := filepath.Join(h.store, "FORMAT")
	if err := os.WriteFile(format, []byte("looprig-fsstore v9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.must(1, "ls")
	if !strings.Contains(r.stderr, `unsupported store format "looprig-fsstore v9"`) || !strings.Contains(r.stderr, `"looprig-fsstore v1"`) {
		t.Errorf("ls of a v9 store: %s", r.stderr)
	}
	e := decode[errorShape](t, h.run("ls", "--json").stdout)
	if e.Error.Type != "StoreError" || e.Error.Kind != "unsupported_format" {
		t.Errorf("ls --json of a v9 store: %+v", e.Error)
	}
	if b, _ := os.ReadFile(format); string(b) != "looprig-fsstore v9\n" {
		t.Errorf("FORMAT rewritten to %q", b)
	}

	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o600)
	r = h.run("--store", other, "ls", "--json")
	e = decode[errorShape](t, r.stdout)
	if r.code != 1 || e.Error.Kind != "unsupported_format" || !strings.Contains(e.Error.Message, "not a looprig store") {
		t.Errorf("ls of a directory that is no store: exit %d %+v", r.code, e.Error)
	}
	if entries, _ := os.ReadDir(other); len(entries) != 1 {
		t.Errorf("looprig wrote into a directory that is no store: %v", entries)
	}
}

// A store owned by another user is refused (unsafe_store), as is one that
// others can write. Needs root to give the store away.
func TestHostileStoreOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown the store to another user")
	}
	h := newHarness(t)
	h.newSession()
	if err := os.Chown(h.store, 65534, 65534); err != nil { // nobody
		t.Skipf("chown: %v", err)
	}
	r := h.run("ls", "--json")
	e := decode[errorShape](t, r.stdout)
	if r.code != 1 || e.Error.Type != "StoreError" || e.Error.Kind != "unsafe_store" || !strings.Contains(e.Error.Message, "owned by uid 65534") {
		t.Errorf("ls of a store owned by nobody: exit %d %+v", r.code, e.Error)
	}
	if r := h.run("new"); r.code != 1 || !strings.Contains(r.stderr, "owned by uid 65534") {
		t.Errorf("new in a store owned by nobody: exit %d %s", r.code, r.stderr)
	}
	os.Chown(h.store, 0, 0)
	os.Chmod(h.store, 0o770)
	if r := h.run("ls"); r.code != 1 || !strings.Contains(r.stderr, "writable by group or others") {
		t.Errorf("ls of a group-writable store: exit %d %s", r.code, r.stderr)
	}
}

// storeFiles lists every path under dir.
func storeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil {
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// Session ids that try to name files outside the store are refused as
// usage errors before the store is touched.
func TestHostileSessionIDs(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	before := storeFiles(t, h.store)
	for _, bad := range []string{"../../etc/passwd", "..", "../" + id, id[:8] + "/../..", "sessions/" + id, "/tmp",
		id + "/catalog", "./" + id[:8], "abcd\\..", id[:8] + "\x1b[2J"} {
		for _, args := range [][]string{{"restore", bad}, {"log", bad}, {"run", bad, "--", "true"}, {"lease", "break", bad, "--yes"}} {
			r := h.run(args...)
			if r.code != 2 || !strings.Contains(r.stderr, "not a session id") {
				t.Errorf("looprig %q: exit %d, stderr %q; want a BadIDError (exit 2)", args, r.code, r.stderr)
			}
			inert(t, "stderr", r.stderr)
		}
		e := decode[errorShape](t, h.run("log", bad, "--json").stdout)
		if e.Error.Type != "BadIDError" || e.Error.Kind != "bad_id" {
			t.Errorf("log %q --json: %+v", bad, e.Error)
		}
	}
	if after := storeFiles(t, h.store); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("hostile ids changed the store:\nbefore %v\nafter  %v", before, after)
	}
}

// Titles and command output with OSC 52, CSI and bidi controls are never
// printed raw for people (ls, restore, log, run, the crash tails of
// restore), and travel exactly, JSON-escaped, with --json.
func TestHostileSessionText(t *testing.T) {
	h := newHarness(t)
	title := "evil\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202etitle\u009b31m"
	r := h.must(0, "new", "--title", title)
	inert(t, "new", r.stdout+r.stderr)
	var id string
	for _, row := range h.ls() {
		if row.Title == title { // exact bytes in JSON
			id = row.ID
		}
	}
	if id == "" {
		t.Fatalf("ls --json does not carry the title exactly: %+v", h.ls())
	}
	out := h.must(0, "ls").stdout
	inert(t, "ls", out)
	if !strings.Contains(out, "evil^[]52;c;ZXZpbA==^G^[[2J<U+202E>titl") { // the column is clipped
		t.Errorf("ls does not show the title inertly:\n%s", out)
	}

	hostile := `printf 'out\033]52;c;ZXZpbA==\007\033[2J\342\200\256rev\302\233\n'; printf 'err\033[31m\n' >&2`
	r = h.must(0, "run", id, "--", hostile)
	inert(t, "run stdout", r.stdout)
	inert(t, "run stderr", r.stderr)

	// A crash mid-turn: restore prints the turn's last lines.
	outputs := func() int { return strings.Count(h.must(0, "log", id, "--json").stdout, `"type":"TurnOutput"`) }
	before := outputs()
	p := h.start("run", id, "--", hostile+"; sleep 30")
	p.waitLine(t, "   <U+202E>rev") // the clear kept "out" above it, the cursor's column
	// Wait until a checkpoint (every 500 ms) has journaled it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if outputs() > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the crashing turn's output was never checkpointed")
		}
	}
	h.killHostOf(id) // the host the first run started: the session crashes
	p.wait(t, 10*time.Second)
	r = h.must(0, "restore", id)
	inert(t, "restore", r.stdout+r.stderr)
	if !strings.Contains(r.stdout, "| out\n") || !strings.Contains(r.stdout, "|    <U+202E>rev<U+009B>\n") { // OSC 52 dropped, CSI 2J carried out on the transcript (termrender)
		t.Errorf("restore does not show the crashed turn's output inertly:\n%s", r.stdout)
	}

	r = h.must(0, "log", id)
	inert(t, "log", r.stdout+r.stderr)
	found := false
	for _, rec := range h.log(id) {
		if rec.Type == "TurnOutput" && strings.Contains(rec.Text, "out\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202erev\u009b") {
			found = true
		}
	}
	if !found {
		t.Errorf("log --json does not carry the output bytes exactly")
	}
}
