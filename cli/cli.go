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
	"strings"
	"syscall"

	"looprig/config"
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
}

// command is a subcommand.
type command struct {
	name  string
	run   func(e *env, args []string) int
	help  string
	brief string
}

var commands []*command

func init() {
	commands = []*command{
		{name: "ls", run: cmdLs, help: helpLs, brief: "list the sessions of the store"},
		{name: "new", run: cmdNew, help: helpNew, brief: "create a session and print its id"},
		{name: "run", run: cmdRun, help: helpRun, brief: "restore a session, run one turn, stream it, shut down"},
		{name: "restore", run: cmdRestore, help: helpRestore, brief: "restore a session (and keep it live with --hold)"},
		{name: "log", run: cmdLog, help: helpLog, brief: "print a session's journal, read-only"},
		{name: "rm", run: cmdRm, help: helpRm, brief: "delete sessions: journal, catalog entry, own workspace"},
		{name: "lease", run: cmdLease, help: helpLease, brief: "take a wedged holder's lease by force"},
		{name: "demo", run: cmdDemo, help: helpDemo, brief: "leave a crashed session in the store to restore"},
		{name: "version", run: cmdVersion, help: helpVersion, brief: "print the version"},
		{name: "help", run: cmdHelp, help: helpHelp, brief: "show help for a command"},
	}
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
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
		return e.fail(usageErr("", flagMessage(err)))
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
		return e.fail(&UsageError{Msg: fmt.Sprintf("unknown command %q", name),
			Hint: "run 'looprig --help' for the list of commands"})
	}
	e.cmd = name
	return c.run(e, rest[1:])
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

// newFlags returns the flag set of a subcommand, with the global flags.
func (e *env) newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	e.globalFlags(fs)
	return fs
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

// parse parses a subcommand's arguments. It returns done with the exit code
// when there is nothing more to do: help was asked for, or the arguments
// are wrong.
func (e *env) parse(fs *flag.FlagSet, args []string, help string) (pos, after []string, dash bool, code int, done bool) {
	pos, after, dash, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(e.stdout, help)
			return nil, nil, false, exitOK, true
		}
		return nil, nil, false, e.fail(usageErr(e.cmd, flagMessage(err))), true
	}
	return pos, after, dash, 0, false
}

func flagMessage(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return "unknown flag " + dashes(rest)
	}
	if rest, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return "flag " + dashes(rest) + " needs a value"
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

// wantNoArgs fails when positional arguments or a "--" were given.
func (e *env) wantNoArgs(pos []string, dash bool) (int, bool) {
	if len(pos) > 0 {
		return e.fail(usageErr(e.cmd, fmt.Sprintf("unexpected argument %q", pos[0]))), true
	}
	if dash {
		return e.fail(usageErr(e.cmd, "unexpected \"--\"")), true
	}
	return 0, false
}

// wantID fails unless exactly one positional argument (a session id) was
// given.
func (e *env) wantID(pos []string, dash bool) (string, int, bool) {
	switch {
	case len(pos) == 0:
		return "", e.fail(usageErr(e.cmd, "missing session id")), true
	case len(pos) > 1:
		return "", e.fail(usageErr(e.cmd, fmt.Sprintf("unexpected argument %q after the session id", pos[1]))), true
	case dash:
		return "", e.fail(usageErr(e.cmd, "unexpected \"--\"")), true
	}
	return pos[0], 0, false
}

func cmdHelp(e *env, args []string) int {
	fs := e.newFlags("help")
	pos, _, _, code, done := e.parse(fs, args, helpHelp)
	if done {
		return code
	}
	if len(pos) == 0 {
		fmt.Fprint(e.stdout, helpMain())
		return exitOK
	}
	name := pos[0]
	if name == "lease" && len(pos) > 1 && pos[1] == "break" {
		fmt.Fprint(e.stdout, helpLease)
		return exitOK
	}
	c := lookup(name)
	if c == nil {
		return e.fail(&UsageError{Msg: fmt.Sprintf("unknown command %q", name),
			Hint: "run 'looprig --help' for the list of commands"})
	}
	fmt.Fprint(e.stdout, c.help)
	return exitOK
}

// runTUI is what looprig does without a subcommand: the terminal UI on the
// store, configuration and theme the global flags chose.
func runTUI(e *env) int {
	in, ok := e.stdinFile()
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
	// An SSH drop (SIGHUP) or a kill (SIGTERM) ends the UI the way q does:
	// the sessions it hosts are shut down cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	err = tui.Run(ctx, tui.Options{
		Store: st, StoreDir: st.Dir(), Workspaces: st.WorkspacesDir(),
		Profiles: profiles, DefaultProfile: cfg.DefaultProfile,
		Theme: theme, ConfigDir: configDir,
		LogPath: filepath.Join(st.LocalDir(), "tui.log"),
	})
	if err != nil {
		return e.fail(err)
	}
	return exitOK
}

// stdinFile returns stdin as a file when it is one.
func (e *env) stdinFile() (*os.File, bool) {
	f, ok := e.stdin.(*os.File)
	return f, ok
}
