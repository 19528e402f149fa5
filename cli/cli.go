// Package cli is the looprig command: global flags, subcommands, exit codes
// and the JSON shapes scripts rely on. main.go only calls Main.
//
// Exit codes: 0 ok, 1 error, 2 usage, 3 restore failed, 4 lease held (or
// lost); `run` exits with its turn's exit code, and 125 when looprig
// itself failed. With --json, errors are one JSON object on stdout:
//
//	{"error":{"type":"RestoreError","kind":"lease_failed","message":"…",…}}
//
// Every piece of session text printed for people (command output, titles,
// error causes) goes through internal/textsafe first.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	// Before Bubble Tea's package init: no command asks the terminal for
	// its background colour (see its documentation).
	_ "early.looprig.invalid/termquiet"

	"looprig/config"
	"looprig/host"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/tui"
)

// Version is the looprig version; release builds set it with
// -ldflags "-X looprig/cli.Version=v1.2.3".
var Version = "dev"

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitRestore     = 3
	exitLease       = 4
	exitRunFailed   = 125 // run: looprig itself failed, the turn did not run
	exitInterrupted = 130 // run: the turn was interrupted
)

// env is one invocation: its standard streams and global flags.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	store      string
	storeSet   bool // --store given
	configPath string
	configSet  bool // --config given
	theme      string

	json bool // --json of the running command
	cmd  string

	// holderHost is the pid of the host that serves, on this machine, the
	// session a failure names as held (failRestore): the hint then says to
	// attach to it rather than to break its lease.
	holderHost int
	// checkedOnly: the restore a failure names was only checked (take
	// checks before it asks the holder): nothing was written at all.
	checkedOnly bool

	// given is the --rig, --placement and --root the command was given
	// (quoted for a shell), which a hint that names a restore repeats.
	given givenProfile
}

// A command is a subcommand, in the manner of cmd/go's base.Command: it
// declares its flags, the arguments it takes and what it needs, and Main
// runs it through invoke, which does for every command, in this order:
// parse the flags (the global ones, --json when it takes it, and its own),
// check the positional arguments, load the configuration, open the store,
// set up interrupts and a deadline, then call run with a *call holding
// what it asked for. A failure on the way is reported and exits as one in
// run would.
type command struct {
	name  string // as typed after looprig ("lease break" for the subcommand)
	brief string // its line in 'looprig --help'
	help  string // 'looprig COMMAND --help'

	json  bool                            // takes --json
	flags func(fs *flag.FlagSet, o *opts) // registers its own flags, if it has any
	args  func(c *call) error             // checks the positional arguments; nil takes any
	needs needs                           // what invoke opens for it
	// interrupts: the first SIGINT or SIGTERM ends c.ctx, the second closes
	// c.sig.force; without it they kill the process, as by default.
	interrupts bool
	timeout    time.Duration // ends c.ctx after it; 0 for no deadline
	// exitRunFailed: failures exit 125, not with their own code (usage
	// errors still exit 2), so that they stay apart from a turn's exit code.
	exitRunFailed bool

	run func(c *call) int

	// dispatch, when set, is called with the arguments as given instead of
	// all of the above: lease, whose one subcommand is lease break.
	dispatch func(e *env, args []string) int
}

// needs is what invoke opens for a command before running it; the zero
// value opens nothing.
type needs int

const (
	// needsConfig loads the configuration (c.cfg): a bad configuration
	// file is an error for every command that works on sessions.
	needsConfig needs = iota + 1
	// needsStore loads the configuration and opens the store (c.st),
	// creating it on first use; invoke closes it when run returns.
	needsStore
)

// opts holds the values of the commands' own flags; each command
// registers those it takes (command.flags).
type opts struct {
	long          bool          // ls -l, --long
	follow        bool          // log -f, --follow
	yes           bool          // rm, lease break --yes
	hold          bool          // restore --hold
	title, seed   string        // new --title, --seed
	profile       profileFlags  // new, run, restore --rig, --placement, --root
	acceptDrift   bool          // run, restore --accept-drift
	keepWorkspace bool          // run, restore, take --keep-workspace
	useCheckpoint bool          // run, restore, take --use-checkpoint
	create        bool          // host --new
	acceptedBy    string        // host --accepted-by: who accepted drift
	detach        bool          // new, run, restore --detach
	inProcess     bool          // run --in-process
	eof           bool          // send --eof
	fromStdin     bool          // send --stdin
	noNewline     bool          // send -n
	waitFor       string        // wait --for
	waitTurn      string        // wait --turn
	waitTimeout   time.Duration // wait --timeout
	allCrashed    bool          // restore --all-crashed
	onlyCrashed   bool          // host --only-crashed, and each restore of --all-crashed
	diffTurn      string        // diff --turn
	diffStat      bool          // diff --stat
	revertTurn    string        // revert --turn
	takeInterrupt bool          // take --interrupt
	takeTimeout   time.Duration // take --timeout
	withoutWS     bool          // take --without-workspace
	hookWait      time.Duration // hook --wait
	hookSocket    string        // hook --socket
	hookTokenFile string        // hook --token-file
	gateID        string        // gate --gate
	search        searchFlags   // search's flags
}

// call is one invocation of a command, with what invoke prepared for it.
type call struct {
	*env
	opts // the command's flags

	args  []string // the positional arguments before a "--"
	input []string // the arguments after it
	dash  bool     // whether there was a "--"

	cfg *config.Config  // with needsConfig and needsStore
	st  *openedStore    // with needsStore
	sig *interrupts     // with interrupts
	ctx context.Context // ends with sig's first signal and the timeout

	ack *ackWriter // run: the LOOPRIG_ACK_FD channel, nil when unset
	// rep is a host's ready descriptor (host started by host.Start),
	// which its restore's progress goes to; nil elsewhere.
	rep *host.Reporter
}

// commands is the command table, in the order 'looprig --help' lists
// them. It is filled in init because help's run reads it.
var commands []*command

func init() {
	commands = []*command{cmdLs, cmdNew, cmdRun, cmdRestore, cmdAttach, cmdSend, cmdGate, cmdWait, cmdStop, cmdTake, cmdLog, cmdSearch, cmdDiff, cmdRevert, cmdFork, cmdRm, cmdGC, cmdLease, cmdDemo, cmdHost, cmdHook, cmdVersion, cmdHelp}
}

var cmdHelp = &command{name: "help", brief: "show help for a command", help: helpHelp, run: runHelp}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// invoke runs cmd with args, the arguments after its name.
func (cmd *command) invoke(e *env, args []string) int {
	if cmd.dispatch != nil {
		return cmd.dispatch(e, args)
	}
	fail := e.fail
	if cmd.exitRunFailed {
		fail = e.failRun
	}
	c := &call{env: e, ctx: context.Background()}
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	e.globalFlags(fs)
	if cmd.json {
		fs.BoolVar(&e.json, "json", false, "JSON output")
	}
	if cmd.flags != nil {
		cmd.flags(fs, &c.opts)
	}
	var err error
	if c.args, c.input, c.dash, err = parseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(e.stdout, cmd.help)
			return exitOK
		}
		e.json = e.json || cmd.json && jsonAsked(args) // a flag after the bad one was not parsed
		return fail(usageErr(e.cmd, flagMessage(fs, err)))
	}
	e.given = c.givenProfile()
	if cmd.args != nil {
		if err := cmd.args(c); err != nil {
			return fail(err)
		}
	}
	if cmd.needs >= needsConfig {
		if c.cfg, err = e.loadConfig(); err != nil {
			return fail(err)
		}
	}
	if cmd.needs >= needsStore {
		if c.st, err = e.openStore(); err != nil {
			return fail(err)
		}
		defer c.st.Close()
	}
	if cmd.interrupts {
		c.sig = notifyInterrupts()
		defer c.sig.stop()
		c.ctx = c.sig.ctx
	}
	if cmd.timeout > 0 {
		var cancel context.CancelFunc
		c.ctx, cancel = context.WithTimeout(c.ctx, cmd.timeout)
		defer cancel()
	}
	return cmd.run(c)
}

// Main runs looprig with args (without the program name) and returns the
// exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	e.json = wantsJSON(args)
	fs := flag.NewFlagSet("looprig", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	e.globalFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(e.stdout, helpMain())
			return exitOK
		}
		return e.fail(usageErr("", flagMessage(fs, err)))
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return runTUI(e)
	}
	name := rest[0]
	if name == demoChildCommand {
		return demoChild(e, rest[1:])
	}
	c := lookup(name)
	if c == nil {
		return e.fail(unknownCommand(name))
	}
	e.cmd = name
	return c.invoke(e, rest[1:])
}

// wantsJSON reports whether --json appears before a "--": errors met
// while parsing are then printed as JSON too.
func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--json" || a == "-json" || a == "--json=true" || a == "-json=true" {
			return true
		}
	}
	return false
}

// strFlag is a string flag that remembers whether it was set.
type strFlag struct {
	val *string
	set *bool
}

func (f strFlag) String() string {
	if f.val == nil {
		return ""
	}
	return *f.val
}

func (f strFlag) Set(s string) error {
	*f.val = s
	if f.set != nil {
		*f.set = true
	}
	return nil
}

// globalFlags registers --store, --config and --theme on fs. Every
// subcommand accepts them too, before or after its own flags.
func (e *env) globalFlags(fs *flag.FlagSet) {
	fs.Var(strFlag{&e.store, &e.storeSet}, "store", "store directory")
	fs.Var(strFlag{&e.configPath, &e.configSet}, "config", "configuration file")
	fs.Var(strFlag{&e.theme, nil}, "theme", "TUI theme")
}

// parseArgs parses flags and positional arguments in any order, up to a
// "--"; what follows "--" is returned as after (dash reports whether there
// was one).
func parseArgs(fs *flag.FlagSet, args []string) (pos, after []string, dash bool, err error) {
	before := args
	for i, a := range args {
		if a == "--" {
			before, after, dash = args[:i], args[i+1:], true
			break
		}
	}
	for {
		if err := fs.Parse(before); err != nil {
			return nil, nil, false, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, after, dash, nil
		}
		pos = append(pos, rest[0])
		before = rest[1:]
	}
}

// jsonAsked reports whether args ask for --json before any "--": a command
// line that does not parse still reports its error as JSON then.
func jsonAsked(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "json" {
			on, err := strconv.ParseBool(value)
			return !hasValue || err == nil && on
		}
	}
	return false
}

// flagMessage words a flag parsing error as the help spells flags
// (--timeout, not -timeout), saying what a value of fs's flag must be.
func flagMessage(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return "unknown flag " + dashes(rest)
	}
	if rest, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return "flag " + dashes(rest) + " needs a value"
	}
	// invalid value "abc" for flag -timeout: parse error
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.Index(rest, " for flag "); i >= 0 {
			value, name := rest[:i], rest[i+len(" for flag "):]
			why := ""
			if j := strings.Index(name, ": "); j >= 0 {
				name, why = name[:j], name[j+2:]
			}
			msg = "invalid value " + value + " for " + dashes(name)
			if f := fs.Lookup(strings.TrimLeft(name, "-")); f != nil && why == "parse error" {
				if g, ok := f.Value.(flag.Getter); ok {
					switch g.Get().(type) {
					case time.Duration:
						why = "want a duration such as 30s, 5m or 1h"
					case int, int64, uint, uint64:
						why = "want a whole number"
					}
				}
			}
			if why != "" {
				msg += ": " + why
			}
		}
	}
	return msg
}

// dashes shows a flag the way the help spells it ("--store"); -h stays.
func dashes(f string) string {
	name := strings.TrimLeft(f, "-")
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// noArgs is the argument rule of a command that takes none.
func noArgs(c *call) error {
	if len(c.args) > 0 {
		return usageErr(c.cmd, fmt.Sprintf("unexpected argument %q", c.args[0]))
	}
	if c.dash {
		return usageErr(c.cmd, `unexpected "--"`)
	}
	return nil
}

// oneID is the argument rule of a command that takes one session id,
// c.args[0].
func oneID(c *call) error {
	switch {
	case len(c.args) == 0:
		return usageErr(c.cmd, "missing session id")
	case len(c.args) > 1:
		return usageErr(c.cmd, fmt.Sprintf("unexpected argument %q after the session id", c.args[1]))
	case c.dash:
		return usageErr(c.cmd, `unexpected "--"`)
	}
	return nil
}

func runHelp(c *call) int {
	if len(c.args) == 0 {
		fmt.Fprint(c.stdout, helpMain())
		return exitOK
	}
	name := c.args[0]
	if name == "lease" && len(c.args) > 1 && c.args[1] == "break" {
		fmt.Fprint(c.stdout, helpLease)
		return exitOK
	}
	cmd := lookup(name)
	if cmd == nil {
		return c.fail(unknownCommand(name))
	}
	fmt.Fprint(c.stdout, cmd.help)
	return exitOK
}

// runTUI is what looprig does without a subcommand: the terminal UI on the
// store, configuration and theme the global flags chose.
func runTUI(e *env) int {
	in, ok := e.stdin.(*os.File)
	out, okOut := e.stdout.(*os.File)
	if !ok || !okOut || !isTerminal(in) || !isTerminal(out) {
		return e.fail(usageErr("", "the terminal UI needs a terminal; without one use a command (looprig ls, looprig restore ID, ... — see looprig --help)"))
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return e.fail(err)
	}
	st, err := e.openStore()
	if err != nil {
		return e.fail(err)
	}
	defer st.Close()
	profiles := map[string]rig.Profile{}
	for _, name := range cfg.Names() {
		if p, err := cfg.Profile(name); err == nil {
			profiles[name] = p
		}
	}
	theme := e.theme
	if theme == "" {
		theme = cfg.Theme
	}
	configDir := ""
	if e.configSet {
		configDir = filepath.Dir(e.configPath)
	} else if path, err := config.DefaultPath(); err == nil {
		configDir = filepath.Dir(path)
	}
	key, err := storeKey(st)
	if err != nil {
		return e.fail(err)
	}
	// An SSH drop (SIGHUP) or a kill (SIGTERM) cancels ctx, which ends the
	// UI the way ctrl+c does: at once, without asking. The sessions run in
	// their hosts, which ignore both: the UI only detaches.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	var clock func() time.Time
	if testTUIClock != nil {
		clock = testTUIClock()
	}
	err = tui.Run(ctx, tui.Options{
		Store: st, StoreDir: st.Dir(), Workspaces: st.WorkspacesDir(),
		StoreKey: key, StartHost: e.tuiStartHost(st, cfg),
		Profiles: profiles, DefaultProfile: cfg.DefaultProfile,
		Theme: theme, ConfigDir: configDir, Dir: startDir(),
		LogPath:     filepath.Join(st.LocalDir(), "tui.log"),
		KeptListing: keptListingPath(st),
		Version:     Version,
		Notify:      cfg.Notify, NotifyAfter: cfg.NotifyAfter,
		FPS:     cfg.TUIFPS,
		Warning: tuiWarning(),
		Now:     clock,
	})
	if err != nil {
		return e.fail(err)
	}
	return exitOK
}

// globalArgs repeats the global flags the user gave, for commands we
// suggest ("--store DIR " or "").
func (e *env) globalArgs() string {
	var b strings.Builder
	if e.storeSet {
		b.WriteString("--store " + textsafe.Line(shellQuote(e.store)) + " ")
	}
	if e.configSet {
		b.WriteString("--config " + textsafe.Line(shellQuote(e.configPath)) + " ")
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// startDir is the current directory, where n in the TUI offers to create
// a session; "" (a scratch directory) when it cannot be told.
func startDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	return wd
}
