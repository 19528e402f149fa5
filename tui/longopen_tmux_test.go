package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"looprig/host"
	"looprig/internal/testbin"
)

// longOpenEnv is how long TestTmuxLongOpenTUI keeps its TUI open under
// activity from other terminals; .ci/run gives it ten minutes in its last
// pass, a run of the package alone 75 seconds.
const longOpenEnv = "LOOPRIG_TEST_LONG_OPEN"

// longOpenClockRate is how much faster than the wall clock the TUI's
// clock runs (the e2e build's LOOPRIG_E2E_CLOCK_RATE): ten minutes open
// are ten hours to everything in it that goes by time.
const longOpenClockRate = 60

// seenWithin bounds how long a change made in another terminal may take
// to show in the TUI's list. The target is a second; the bound leaves
// room for a loaded CI machine, and the figures are logged.
const seenWithin = 5 * time.Second

// TestTmuxLongOpenTUI (issue 35, "the TUI never goes stale"): one TUI is
// left open while other terminals, cycle after cycle, create sessions in
// background hosts, run turns in them (the TUI shows each running), stop
// at a gate (it shows the gate, and /needs:me lists the session), ring
// the bell, and kill hosts (it shows the crash). Every change must show
// in the TUI's list within seenWithin, in the last cycle as in the first.
func TestTmuxLongOpenTUI(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux end-to-end tests are slow; skipped with -short")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	open := 75 * time.Second
	if s := os.Getenv(longOpenEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s=%q: %v", longOpenEnv, s, err)
		}
		open = d
	}
	bin := testbin.Looprig(t, "looprig_e2e")
	e := newTmux(t, bin)
	e.env = "LOOPRIG_E2E_CLOCK_RATE=" + strconv.Itoa(longOpenClockRate)
	e.start("tui")
	e.started("tui")
	// The other terminal: a shell, where run asks its gate's question.
	e.Start("other", 120, 20, "sh")

	o := &otherTerminals{t: t, e: e}
	// The TUI's cursor stays on the first session: the others are never
	// the selected one, so nothing this TUI does clears what they ask.
	anchor := o.newSession("anchor")
	o.waitRow("created", anchor, "")

	var crashed []string
	end := time.Now().Add(open)
	for cycle := 0; cycle < 2 || time.Now().Before(end); cycle++ {
		id := o.newSession(fmt.Sprintf("cycle-%d", cycle))
		o.waitRow("created", id, "")

		// The other terminal starts blank: its last cycle's question is
		// not this one's.
		e.Type("other", `printf '\033[H\033[2J'`)
		e.Send("other", "Enter")
		for strings.Contains(e.Screen("other"), "approve?") {
			time.Sleep(50 * time.Millisecond)
		}
		run := shellQ(bin) + " --store " + shellQ(e.store) + " run " + id + " -- "
		e.Type("other", fmt.Sprintf("%s'echo tick-%d; sleep 3' && %s'rm -rf ./junk; echo after-gate'", run, cycle, run))
		e.Send("other", "Enter")
		o.waitRow("running", id, "▶")
		e.WaitFor("other", 15*time.Second, "approve? [y/N]")
		o.waitRow("gate", id, "? gate")
		o.needsMe(id)
		e.Type("other", "y")
		e.Send("other", "Enter")
		e.WaitFor("other", 15*time.Second, "after-gate")
		o.waitRow("turn end", id, "✓")

		bell := o.start("run", id, "--", `printf '\a'; sleep 3`)
		o.waitRow("bell", id, "! bell")
		if err := bell.Wait(); err != nil {
			t.Fatalf("looprig run (bell): %v", err)
		}

		if cycle > 0 { // the previous cycle's host dies
			prev := o.ids[len(o.ids)-2]
			o.killHost(prev)
			o.waitRow("crash", prev, "✗ crashed")
			crashed = append(crashed, prev)
		}
		// The list stays within the pane: the oldest crashed session is
		// deleted from another terminal, and its row goes.
		if len(crashed) > 3 {
			gone := crashed[0]
			crashed = crashed[1:]
			o.cli("rm", gone, "--yes")
			o.waitGone(gone)
		}
		// A quiet spell: minutes on the TUI's clock.
		time.Sleep(3 * time.Second)
	}
	// The sessions that crashed long ago still show as crashed.
	s := e.Screen("tui")
	for _, id := range crashed {
		if row := rowOf(s, o.short(id)); row != "" && !strings.Contains(row, "✗ crashed") {
			t.Errorf("session %s: row %q, want it crashed", o.short(id), row)
		}
	}
	o.report()
	e.Send("tui", "q")
}

// otherTerminals is what the test does from terminals other than the
// TUI's, and how long the TUI took to show each change.
type otherTerminals struct {
	t     *testing.T
	e     *tmuxEnv
	ids   []string
	shown map[string][]time.Duration // by kind of change
}

// command is the binary as another terminal runs it, without a terminal.
func (o *otherTerminals) command(args ...string) *exec.Cmd {
	cmd := exec.Command(o.e.bin, append([]string{"--store", o.e.store}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+o.e.home, "XDG_CONFIG_HOME="+filepath.Join(o.e.home, "config"),
		"XDG_STATE_HOME="+filepath.Join(o.e.home, "state"), "LOOPRIG_STORE=")
	cmd.Dir = o.e.home
	return cmd
}

// start starts the binary; the caller waits for it.
func (o *otherTerminals) start(args ...string) *exec.Cmd {
	o.t.Helper()
	cmd := o.command(args...)
	if err := cmd.Start(); err != nil {
		o.t.Fatal(err)
	}
	return cmd
}

// cli runs the binary and returns its output.
func (o *otherTerminals) cli(args ...string) string {
	o.t.Helper()
	out, err := o.command(args...).CombinedOutput()
	if err != nil {
		o.t.Fatalf("looprig %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newSession creates a session in a background host.
func (o *otherTerminals) newSession(title string) string {
	o.t.Helper()
	out := o.cli("new", "--detach", "--scratch", "--title", title, "--json")
	var r struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.ID == "" {
		o.t.Fatalf("looprig new --json: %v: %s", err, out)
	}
	o.ids = append(o.ids, r.ID)
	return r.ID
}

func (o *otherTerminals) short(id string) string { return id[:8] }

// waitRow waits until session id's row in the TUI's list holds want
// ("": the row exists), and records how long that took.
func (o *otherTerminals) waitRow(kind, id, want string) {
	o.t.Helper()
	start := time.Now()
	var s string
	for time.Since(start) < seenWithin {
		s = o.e.Screen("tui")
		if row := rowOf(s, o.short(id)); row != "" && strings.Contains(row, want) {
			if o.shown == nil {
				o.shown = map[string][]time.Duration{}
			}
			o.shown[kind] = append(o.shown[kind], time.Since(start))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	o.t.Fatalf("%s of session %s did not show within %s (want %q in its row); the TUI:\n%s", kind, o.short(id), seenWithin, want, s)
}

// waitGone waits until session id has no row in the TUI's list.
func (o *otherTerminals) waitGone(id string) {
	o.t.Helper()
	for end := time.Now().Add(seenWithin); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if rowOf(o.e.Screen("tui"), o.short(id)) == "" {
			return
		}
	}
	o.t.Fatalf("session %s, deleted, still has a row:\n%s", o.short(id), o.e.Screen("tui"))
}

// needsMe checks that the /needs:me filter lists session id, then clears
// the filter.
func (o *otherTerminals) needsMe(id string) {
	o.t.Helper()
	// "/needs:me" typed at once arrives in one read, as keys typed fast
	// over SSH do: the TUI must take "/" and type the rest into the filter.
	o.e.Type("tui", "/needs:me")
	o.e.Send("tui", "Enter")
	s := o.waitScreen(seenWithin, "Sessions /needs:me")
	if s == "" {
		o.t.Fatalf("the filter /needs:me did not apply:\n%s", o.e.Screen("tui"))
	}
	if rowOf(s, o.short(id)) == "" {
		o.t.Errorf("/needs:me does not list session %s, at its gate:\n%s", o.short(id), s)
	}
	o.e.Send("tui", "/")
	o.e.Send("tui", "C-u")
	o.e.Send("tui", "Enter")
	deadline := time.Now().Add(seenWithin)
	for strings.Contains(o.e.Screen("tui"), "/needs:me") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	o.selectRow(o.ids[0])
}

// selectRow moves the TUI's cursor to session id.
func (o *otherTerminals) selectRow(id string) {
	o.t.Helper()
	deadline := time.Now().Add(seenWithin)
	for time.Now().Before(deadline) {
		s := o.e.Screen("tui")
		cur, want := -1, -1
		for i, line := range strings.Split(s, "\n") {
			if strings.HasPrefix(line, "┃▸") || strings.HasPrefix(line, "│▸") {
				cur = i
			}
			if rowOf(line, o.short(id)) != "" {
				want = i
			}
		}
		switch {
		case cur < 0 || want < 0:
		case cur == want:
			return
		case cur < want:
			o.e.Send("tui", "Down")
		default:
			o.e.Send("tui", "Up")
		}
		time.Sleep(100 * time.Millisecond)
	}
	o.t.Fatalf("could not select session %s:\n%s", o.short(id), o.e.Screen("tui"))
}

// waitScreen waits until the TUI's screen holds want, and returns it ("":
// it did not within d).
func (o *otherTerminals) waitScreen(d time.Duration, want string) string {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if s := o.e.Screen("tui"); strings.Contains(s, want) {
			return s
		}
	}
	return ""
}

// killHost SIGKILLs the host holding session id.
func (o *otherTerminals) killHost(id string) {
	o.t.Helper()
	for _, r := range ls(o.t, o.e.bin, o.e.store) {
		if r.ID == id && r.Holder != nil && r.Holder.PID > 0 {
			if err := syscall.Kill(r.Holder.PID, syscall.SIGKILL); err != nil {
				o.t.Fatal(err)
			}
			return
		}
	}
	o.t.Fatalf("session %s has no host to kill: ls --json %s\n%s", o.short(id), rowJSON(ls(o.t, o.e.bin, o.e.store), id), o.hostLog(id))
}

// rowJSON is session id's row of an ls listing, as JSON ("none" if the
// listing has none).
func rowJSON(rows []lsRow, id string) string {
	for _, r := range rows {
		if r.ID == id {
			b, _ := json.Marshal(r)
			return string(b)
		}
	}
	return "none"
}

// hostLog is the tail of the log session id's host wrote (host.LogPath;
// a directory store's key is its directory), for a failure's message.
func (o *otherTerminals) hostLog(id string) string {
	key, err := filepath.EvalSymlinks(o.e.store)
	if err != nil {
		return err.Error()
	}
	path, err := host.LogPath(key, id)
	if err != nil {
		return err.Error()
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return "host log " + path + ":\n" + string(b)
}

// report logs the median and the slowest time to show, per change.
func (o *otherTerminals) report() {
	kinds := make([]string, 0, len(o.shown))
	for k := range o.shown {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		d := slices.Clone(o.shown[k])
		slices.Sort(d)
		o.t.Logf("%-9s shown in the TUI: median %s, slowest %s, of %d", k,
			d[len(d)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond), len(d))
	}
}

// rowOf is the list row of the session with the short id, "" if none.
func rowOf(screen, short string) string {
	for _, line := range strings.Split(screen, "\n") {
		if (strings.HasPrefix(line, "┃") || strings.HasPrefix(line, "│")) && strings.Contains(line, " "+short+" ") {
			return line
		}
	}
	return ""
}

func shellQ(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
