package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"looprig/internal/testbin"
	"looprig/internal/tmuxtest"
)

// End-to-end in a real terminal: tmux runs the binary, send-keys types and
// capture-pane reads the screen. Skipped where tmux is missing (.ci/run
// installs it) and with -short.
// The binary is the real `looprig`, whose TUI is the command with no
// subcommand.

type tmuxEnv struct {
	*tmuxtest.Server
	t     *testing.T
	home  string
	store string
	bin   string
	// project is where the TUI starts: n offers it as a new session's
	// directory.
	project string
	// env is more of the TUI's environment ("NAME=value ...").
	env string
}

func newTmux(t *testing.T, bin string) *tmuxEnv {
	t.Helper()
	home := t.TempDir()
	e := &tmuxEnv{Server: tmuxtest.New(t), t: t, home: home, store: filepath.Join(home, "store"), bin: bin, project: filepath.Join(home, "project")}
	if err := os.Mkdir(e.project, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Kill(); e.stopHosts() }) // the terminals first: then every process of the binary is a host
	return e
}

// shellLine runs the binary, then reports its exit status and keeps the
// pane open, so a crash or a quit can be read and the pane respawned.
func (e *tmuxEnv) shellLine() string {
	env := fmt.Sprintf("HOME=%q XDG_CONFIG_HOME=%q XDG_STATE_HOME=%q LOOPRIG_STORE= NO_COLOR= CI= COLORTERM= TERM=xterm-256color %s",
		e.home, filepath.Join(e.home, "config"), filepath.Join(e.home, "state"), e.env)
	return fmt.Sprintf("cd %q && env %s %q --store %q; echo \"[exit $?]\"; exec sleep 3600", e.project, env, e.bin, e.store)
}

func (e *tmuxEnv) start(name string) { e.Start(name, 160, 45, "sh", "-c", e.shellLine()) }

func (e *tmuxEnv) respawn(name string) { e.Respawn(name, "sh", "-c", e.shellLine()) }

// started waits for the TUI.
func (e *tmuxEnv) started(name string) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := e.Screen(name)
		if strings.Contains(s, "looprig") && (strings.Contains(s, "Sessions") || strings.Contains(s, "terminal too small")) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: the TUI did not start; screen:\n%s", name, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tuiPID finds the binary: the child of the pane's shell.
func (e *tmuxEnv) tuiPID(name string) int {
	e.t.Helper()
	pane, err := strconv.Atoi(e.Display(name, "#{pane_pid}"))
	if err != nil {
		e.t.Fatal(err)
	}
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pane) && !strings.Contains(s[:i], "sleep") {
			return pid
		}
	}
	e.t.Fatalf("no child of pane pid %d", pane)
	return 0
}

type lsRow struct {
	ID      string `json:"id"`
	ShortID string `json:"short_id"`
	State   string `json:"state"`
	Reason  string `json:"reason"`
	Epoch   uint64 `json:"epoch"`
	Holder  *struct {
		PID int `json:"pid"`
	} `json:"holder"`
}

// ls lists the store with the real CLI (nil when it has no ls yet).
func ls(t *testing.T, looprig, store string) []lsRow {
	out, err := exec.Command(looprig, "--store", store, "ls", "--json").Output()
	if err != nil {
		t.Logf("looprig ls --json: %v", err)
		return nil
	}
	var rows []lsRow
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Logf("looprig ls --json: %v: %s", err, out)
		return nil
	}
	return rows
}

// hostPID is the pid of the process holding the store's one session, per
// looprig ls.
func (e *tmuxEnv) hostPID(looprig string) int {
	e.t.Helper()
	rows := ls(e.t, looprig, e.store)
	if len(rows) != 1 || rows[0].Holder == nil || rows[0].Holder.PID == 0 {
		e.t.Fatalf("want one held session, got %+v", rows)
	}
	return rows[0].Holder.PID
}

// stopHosts stops the hosts left running (sessions outlive the TUI):
// SIGTERM, as a logout would, then SIGKILL. Once the terminals are gone,
// every process still running the test's binary is a host.
func (e *tmuxEnv) stopHosts() {
	bin, err := os.Stat(e.bin)
	if err != nil {
		return
	}
	find := func() []int {
		var pids []int
		ents, _ := os.ReadDir("/proc")
		for _, d := range ents {
			pid, err := strconv.Atoi(d.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			if fi, err := os.Stat(filepath.Join("/proc", d.Name(), "exe")); err == nil && os.SameFile(fi, bin) {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	for _, pid := range find() {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(find()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	for _, pid := range find() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// binary is the real looprig, for the terminal tests (skipped with
// -short, and where tmux is missing).
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("tmux end-to-end tests are slow; skipped with -short")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	return testbin.Looprig(t)
}

func TestTmuxDemo(t *testing.T) {
	looprig := binary(t)
	tmuxDemo(t, looprig, looprig)
}

// tmuxDemo is the detach, crash and restore demo: create, submit a long
// command, kill -9 the TUI: the session runs on in its host; start the TUI
// again, see it live and attach (the ticks go on); kill -9 the host, see
// crashed, restore, see the interrupted turn and its earlier output,
// submit again, shut it down (X), quit.
func tmuxDemo(t *testing.T, bin, looprig string) {
	e := newTmux(t, bin)
	e.start("demo")
	e.started("demo")
	e.WaitFor("demo", 10*time.Second, "no sessions yet")
	e.Send("demo", "n")
	e.WaitFor("demo", 5*time.Second, "New session")
	e.Type("demo", "counting")
	e.Send("demo", "Enter")
	e.WaitFor("demo", 10*time.Second, "live", "counting", "session started")
	e.Send("demo", "i")
	e.WaitFor("demo", 15*time.Second, "enter submit") // the input line is open (a key sent during a history replay is refused)
	e.Type("demo", "for i in $(seq 60); do echo tick-$i; sleep 1; done")
	e.Send("demo", "Enter")
	e.WaitFor("demo", 15*time.Second, "tick-2")

	// The TUI dies: the session does not.
	if err := syscall.Kill(e.tuiPID("demo"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("demo", 10*time.Second, "[exit 137]")
	hostPID := e.hostPID(looprig)
	e.respawn("demo")
	e.started("demo")
	e.WaitFor("demo", 10*time.Second, "● live", "counting", "live · pid "+strconv.Itoa(hostPID), "1 live in the background")
	// opening it attaches: the history, then the ticks that go on
	e.WaitFor("demo", 15*time.Second, "tick-1", "(attached)", "tick-6")

	// The host dies: a crash.
	if err := syscall.Kill(hostPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("demo", 10*time.Second, "went away", "crashed")
	e.Send("demo", "r")
	s := e.WaitFor("demo", 20*time.Second, "restored here at epoch 2", "interrupted (crash)", "tick-3", "live")
	if !strings.Contains(s, "1 turn interrupted") {
		t.Errorf("restore outcome not shown:\n%s", s)
	}
	e.Send("demo", "i")
	e.WaitFor("demo", 15*time.Second, "enter submit") // the input line is open (a key sent during a history replay is refused)
	e.Type("demo", "echo after-restore")
	e.Send("demo", "Enter")
	e.WaitFor("demo", 15*time.Second, "after-restore", "turn 1 done: exit 0")
	e.Send("demo", "X")
	e.WaitFor("demo", 5*time.Second, "Shut down session")
	e.Send("demo", "Right", "Enter")
	e.WaitFor("demo", 15*time.Second, "○ idle", "cleanly")
	e.Send("demo", "q")
	e.WaitFor("demo", 20*time.Second, "[exit 0]")

	if rows := ls(t, looprig, e.store); rows != nil {
		if len(rows) != 1 || rows[0].State != "idle" || rows[0].Epoch != 2 {
			t.Fatalf("after quitting: %+v", rows)
		}
	}
	if b, err := os.ReadFile(filepath.Join(e.store, "tui.log")); err == nil && len(b) > 0 {
		t.Logf("the TUI logged to its file (%d bytes), never to the terminal", len(b))
	}
}

func TestTmuxTwoTUIsLeaseLost(t *testing.T) {
	looprig := binary(t)
	tmuxTwo(t, looprig, looprig)
}

// tmuxTwo: terminal A creates a session, terminal B finds it live in its
// host and attaches: both see its output. The lease is broken from the
// command line: both show LEASE LOST within two seconds and refuse writes.
// B restores it in a new host; A attaches to that one with r.
func tmuxTwo(t *testing.T, bin, looprig string) {
	e := newTmux(t, bin)
	e.start("a")
	e.started("a")
	e.Send("a", "n")
	e.WaitFor("a", 5*time.Second, "New session")
	e.Type("a", "shared")
	e.Send("a", "Enter")
	e.WaitFor("a", 10*time.Second, "live", "shared")
	e.Send("a", "i")
	e.WaitFor("a", 15*time.Second, "enter submit") // the input line is open (a key sent during a history replay is refused)
	e.Type("a", "for i in $(seq 100); do echo beat-$i; sleep 1; done")
	e.Send("a", "Enter")
	e.WaitFor("a", 10*time.Second, "beat-1")

	e.start("b")
	e.started("b")
	s := e.WaitFor("b", 10*time.Second, "● live", "shared", "(attached)", "beat-")
	short := ""
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "● live"); i >= 0 {
			if f := strings.Fields(line[i+len("● live"):]); len(f) > 0 {
				short = f[0]
			}
		}
	}
	if len(short) != 8 {
		t.Fatalf("no short id on B's screen:\n%s", s)
	}
	e.WaitFor("b", 5*time.Second, "beat-3")

	oldHost := e.hostPID(looprig)
	out, err := exec.Command(looprig, "--store", e.store, "lease", "break", short, "--yes").CombinedOutput()
	if err != nil {
		t.Fatalf("looprig lease break: %v\n%s", err, out)
	}
	start := time.Now()
	e.WaitFor("a", 5*time.Second, "LEASE LOST")
	e.WaitFor("b", 5*time.Second, "LEASE LOST")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("LEASE LOST showed after %s, want ≤ 2s", d)
	} else {
		t.Logf("LEASE LOST showed %s after the break", d.Round(10*time.Millisecond))
	}
	// A refuses writes now.
	e.Send("a", "i")
	e.WaitFor("a", 5*time.Second, "read-only: lease lost")
	e.Send("a", "Escape")

	// B restores it in a new host once the old one has let go of the
	// project directory (an exclusive root), which it does as it shuts the
	// session down after the loss: a restore before that is refused
	// (lease_failed, the root busy), as a race pass on a loaded machine
	// saw. A lease break does not take the root: the old host may still be
	// writing it (a revert). A attaches to the new host.
	waitGone(t, oldHost)
	e.Send("b", "r")
	e.WaitFor("b", 20*time.Second, "restored here at epoch", "(attached)")
	pid := e.hostPID(looprig)
	e.Send("a", "Escape") // dismiss the banner
	e.WaitFor("a", 10*time.Second, "live · pid "+strconv.Itoa(pid))
	e.Send("a", "r")
	e.WaitFor("a", 10*time.Second, "(attached)", "Events · live")
	e.Send("a", "i")
	e.WaitFor("a", 15*time.Second, "enter submit")
	e.Type("a", "echo from-a-again")
	e.Send("a", "Enter")
	e.WaitFor("a", 15*time.Second, "from-a-again")
	e.WaitFor("b", 15*time.Second, "from-a-again")
	// q while the turn still runs asks first (newQuitDialog): wait for
	// its end, so q quits at once.
	e.WaitFor("a", 15*time.Second, "last turn #1 done")
	e.Send("a", "q")
	e.WaitFor("a", 20*time.Second, "[exit 0]")
	e.Send("b", "X")
	e.WaitFor("b", 5*time.Second, "Shut down session")
	e.Send("b", "Right", "Enter")
	e.WaitFor("b", 15*time.Second, "○ idle")
	e.Send("b", "q")
	e.WaitFor("b", 20*time.Second, "[exit 0]")
}

// TestTmuxTurnTerminal: a turn's output arrives in the events pane as a
// terminal shows it — a colour as an SGR of the pane (capture-pane -e), a
// "\r" progress line as its last state — and i + a typed line answers the
// turn's read through its terminal.
func TestTmuxTurnTerminal(t *testing.T) {
	looprig := binary(t)
	e := newTmux(t, looprig)
	e.start("tty")
	e.started("tty")
	e.WaitFor("tty", 10*time.Second, "no sessions yet")
	e.Send("tty", "n")
	e.WaitFor("tty", 5*time.Second, "New session")
	e.Type("tty", "terminal")
	e.Send("tty", "Enter")
	e.WaitFor("tty", 10*time.Second, "live", "terminal", "session started")
	e.Send("tty", "i")
	e.WaitFor("tty", 15*time.Second, "enter submit")
	e.Type("tty", `printf "\033[31mred\033[0m plain\n"; printf "progress 10%%\rprogress 100%%\n"; read name; echo "got $name"`)
	e.Send("tty", "Enter")
	s := e.WaitFor("tty", 15*time.Second, "red plain", "progress 100%")
	// (the turn's own line quotes the command: only output lines count)
	if regexp.MustCompile(`[│┃]  progress 10%`).MatchString(s) || !regexp.MustCompile(`[│┃]  progress 100% `).MatchString(s) {
		t.Errorf("the \\r progress line shows its first state:\n%s", s)
	}
	colour := e.Run("capture-pane", "-e", "-p", "-t", "tty")
	// red in red (31, or its 256-colour or truecolor form), then the colour
	// reset before " plain"
	red := regexp.MustCompile(`\x1b\[(?:[0-9;]*;)?(?:31|38;5;(?:1|9|124|160|196)|38;2;\d+;\d+;\d+)m(?:\x1b\[[0-9;]*m)*red\x1b\[(?:0|39)?m plain`)
	if !red.MatchString(colour) {
		t.Errorf("red is not drawn as a red SGR:\n%q", colour)
	}

	e.Send("tty", "i")
	e.WaitFor("tty", 10*time.Second, "to turn 0 ›")
	e.Type("tty", "from-tmux")
	e.Send("tty", "Enter")
	e.WaitFor("tty", 15*time.Second, "got from-tmux", "turn 0 done: exit 0")

	// A full-screen program: its screen in the events pane, in colour,
	// and the keys through f; the transcript after it.
	script := filepath.Join(t.TempDir(), "screen.sh")
	program := `printf '\033[?1049h\033[2J\033[H\033[32mscreen-ready\033[0m'
IFS= read -rsn1 a; printf '\033[3;1Hgot-%s' "$a"
IFS= read -rsn1 b; printf '\033[?1049l'; echo "screen-left"
`
	if err := os.WriteFile(script, []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Send("tty", "i")
	e.WaitFor("tty", 15*time.Second, "enter submit")
	e.Type("tty", "bash "+script)
	e.Send("tty", "Enter")
	e.WaitFor("tty", 15*time.Second, "turn 1's screen", "screen-ready")
	if green := regexp.MustCompile(`\x1b\[(?:[0-9;]*;)?(?:32|38;5;(?:2|10|34|40|46)|38;2;\d+;\d+;\d+)m(?:\x1b\[[0-9;]*m)*screen-ready`); !green.MatchString(e.Run("capture-pane", "-e", "-p", "-t", "tty")) {
		t.Errorf("the screen's green is not drawn as a green SGR")
	}
	e.Send("tty", "f")
	e.WaitFor("tty", 5*time.Second, "keys go to the full-screen program")
	e.Send("tty", "x")
	e.WaitFor("tty", 10*time.Second, "got-x")
	e.Send("tty", "y")
	e.WaitFor("tty", 15*time.Second, "screen-left", "[full-screen program ended]", "turn 1 done: exit 0")
	e.Send("tty", "C-]")
	e.WaitFor("tty", 5*time.Second, "keys go to looprig again")

	e.Send("tty", "X")
	e.WaitFor("tty", 5*time.Second, "Shut down session")
	e.Send("tty", "Right", "Enter")
	e.WaitFor("tty", 15*time.Second, "○ idle")
	e.Send("tty", "q")
	e.WaitFor("tty", 20*time.Second, "[exit 0]")
}
