// Package config loads looprig's configuration file and resolves profile
// names to rig profiles.
//
// The file is TOML, at $XDG_CONFIG_HOME/looprig/config.toml (else
// ~/.config/looprig/config.toml) unless --config names another:
//
//	default_profile = "work"     # profile of `looprig new` without --rig
//	theme = "dark"               # TUI theme
//	notify = "bell"              # bell | osc9 | osc777 | none: how the TUI tells you a
//	                             # session in the background needs you (default bell)
//	notify_after = "10s"         # a finished turn notifies when it ran at least this long
//	tui_fps = 30                 # the most frames a second the TUI draws, 1 to 120 (default 30)
//
//	[profiles.work]
//	engine = "shell"             # shell | demo | claude | codex (default shell)
//	placement = "exclusive"      # session | exclusive | shared (default: none pinned; a
//	                             # session is exclusive in the directory 'new' ran in, or
//	                             # session with 'new --scratch', and restores as recorded)
//	root = "~/src/project"       # required for exclusive and shared
//	gate_policy = ["rm -rf", "sudo", "git push --force"]
//	seed = "~/templates/project" # copied into each new session's workspace
//	tty = true                   # turns run under a pseudo-terminal (default true);
//	                             # false: pipes and /dev/null stdin, bytes exactly as printed
//	term = "xterm-256color"      # TERM under the pseudo-terminal (the default)
//	shell = "/bin/bash"          # turns run as SHELL -c INPUT; an absolute path to an
//	                             # executable (default $SHELL when it is one, else /bin/sh,
//	                             # for a new session; a restore keeps the session's)
//	shell_interactive = true     # SHELL -i -c INPUT: turns read your ~/.bashrc or ~/.zshrc
//	                             # (aliases, functions); default false
//	checkpoint = "turn"          # turn | stop | off: when the workspace is checkpointed into
//	                             # the store (default turn; shared placement: off only)
//	checkpoint_max = "1GiB"      # a bigger workspace is not checkpointed (a visible warning);
//	                             # bytes, or a string with B, KB, MB, GB, KiB, MiB or GiB
//	checkpoint_exclude = ["node_modules/", "*.o"] # left out (gitignore syntax), beside the
//	                             # workspace's own .looprigignore and, in a git work tree,
//	                             # .gitignore files
//	checkpoint_include = [".env.local"] # taken back from every exclusion (gitignore syntax),
//	                             # the default secrets too (checkpoint.DefaultExcludes)
//
//	[profiles.agent]
//	engine = "claude"            # each turn is a prompt to Claude Code, in one conversation (or "codex")
//	agent_command = "claude"     # the agent's program: a name in $PATH or a path (default claude)
//	agent_allow = ["Read", "Grep", "Bash(git status:*)"] # tools used without a gate (default:
//	                             # the read-only ones); every other tool call is a gate
//	agent_gate_timeout = "10m"   # a tool's gate nobody answers is denied after this (default 10m)
//	agent_interactive = false    # true: each turn is the agent's own full-screen interface (f to type)
//
// The built-in profiles "default" (shell engine, one workspace per session)
// and "demo" (demo engine) always exist and cannot be redefined. Paths may
// start with "~/"; relative paths are relative to the file's directory.
//
// Every mistake is a *Error naming the file, the line and the field.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"looprig/internal/tomlscan"
	"looprig/rig"
	"looprig/rig/checkpoint"
	"looprig/rig/engine"
)

// NotifyModes are the values of notify: the terminal bell, a desktop
// notification by OSC 9 (iTerm2, kitty, WezTerm, foot, Windows Terminal)
// or OSC 777 (urxvt, foot, kitty, WezTerm, Ghostty), or nothing.
var NotifyModes = []string{"bell", "osc9", "osc777", "none"}

// Defaults of notify and notify_after.
const (
	DefaultNotify      = "bell"
	DefaultNotifyAfter = 10 * time.Second
)

// DefaultTUIFPS and MaxTUIFPS bound tui_fps: how many frames a second the
// TUI may draw while its view keeps changing (the TUI's default, tui.FPS,
// is DefaultTUIFPS). More than 120 is more than a terminal shows.
const (
	DefaultTUIFPS = 30
	MaxTUIFPS     = 120
)

// Built-in profile names.
const (
	DefaultProfile = "default"
	DemoProfile    = "demo"
)

// Config is a loaded configuration file (or the built-in configuration
// when there is no file).
type Config struct {
	// Path is the file the configuration was read from; "" when none.
	Path string
	// DefaultProfile names the profile of new sessions ("default" unless
	// the file says otherwise).
	DefaultProfile string
	// Theme is the TUI theme the file asks for ("" for the default).
	Theme string
	// Notify is how the TUI notifies (one of NotifyModes; "bell" unless
	// the file says otherwise).
	Notify string
	// NotifyAfter is how long a turn must have run for its end to notify.
	NotifyAfter time.Duration
	// TUIFPS is how many frames a second the TUI may draw: a frame is
	// drawn as soon as it is pending unless the last one is younger than
	// 1/TUIFPS; an idle TUI draws none.
	TUIFPS int

	profiles  map[string]rig.Profile // user profiles only
	rootLines map[string]int         // line of each user profile's root key (0: unknown)
}

// Error is a mistake in a configuration file.
type Error struct {
	File string
	// Line is 1-based; 0 when the line is unknown.
	Line int
	// Field is the dotted key concerned ("profiles.work.placement"); "" for
	// a syntax error.
	Field  string
	Reason string
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// UnknownProfileError names a profile that does not exist.
type UnknownProfileError struct {
	Name  string
	Known []string
}

func (e *UnknownProfileError) Error() string {
	return fmt.Sprintf("unknown profile %q (known profiles: %s)", e.Name, strings.Join(e.Known, ", "))
}

// DefaultPath is where the configuration file is looked for when --config
// is not given: $XDG_CONFIG_HOME/looprig/config.toml, else
// ~/.config/looprig/config.toml.
func DefaultPath() (string, error) {
	if dir := os.Getenv("XDG_CONFIG_HOME"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "looprig", "config.toml"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the configuration directory: %w", err)
	}
	return filepath.Join(home, ".config", "looprig", "config.toml"), nil
}

// Builtin returns the configuration without a file.
func Builtin() *Config {
	return &Config{DefaultProfile: DefaultProfile, Notify: DefaultNotify, NotifyAfter: DefaultNotifyAfter, TUIFPS: DefaultTUIFPS,
		profiles: map[string]rig.Profile{}, rootLines: map[string]int{}}
}

// Load reads the configuration file at path. A missing file is the
// built-in configuration unless mustExist (the user named the file).
func Load(path string, mustExist bool) (*Config, error) {
	data, err := readFile(path) // bounded, regular files only
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !mustExist {
			return Builtin(), nil
		}
		reason := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			reason = "cannot read the configuration file: " + pe.Err.Error()
		}
		return nil, &Error{File: path, Reason: reason, Err: err}
	}
	return Parse(path, data)
}

// keys of a profile table, in the order they are documented.
var profileKeys = []string{"engine", "placement", "root", "gate_policy", "seed", "tty", "term", "shell", "shell_interactive", "checkpoint", "checkpoint_max", "checkpoint_exclude", "checkpoint_include", "agent_command", "agent_allow", "agent_gate_timeout", "agent_interactive"}

var topKeys = []string{"default_profile", "theme", "notify", "notify_after", "tui_fps", "profiles"}

// ProfileKeys returns the keys a profile table accepts, in the order they
// are documented (and listed by an unknown key's error).
func ProfileKeys() []string { return slices.Clone(profileKeys) }

// TopLevelKeys returns the keys the file accepts outside a profile table,
// "profiles" (the tables) last.
func TopLevelKeys() []string { return slices.Clone(topKeys) }

var profileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Parse parses the contents of a configuration file; path names it in
// errors and anchors relative paths.
func Parse(path string, data []byte) (*Config, error) {
	// The decoder's cost is quadratic in nesting and dotted keys: bound
	// them first.
	if err := tomlscan.Check(data, tomlscan.Default); err != nil {
		var se *tomlscan.ShapeError
		errors.As(err, &se)
		return nil, &Error{File: path, Line: se.Line, Reason: se.Reason, Err: err}
	}
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{File: path, Line: syntaxLine(data, pe), Reason: "invalid TOML: " + pe.Message, Err: err}
		}
		return nil, &Error{File: path, Reason: "invalid TOML: " + err.Error(), Err: err}
	}
	loc := locate(string(data))
	fail := func(reason string, key ...string) error {
		return &Error{File: path, Line: loc.line(key), Field: strings.Join(key, "."), Reason: reason}
	}
	c := Builtin()
	c.Path = path
	for _, k := range sortedKeys(doc, loc) {
		if !slices.Contains(topKeys, k) {
			return nil, fail(fmt.Sprintf("unknown key %q (known keys: %s, and [profiles.NAME] tables)", k, strings.Join(topKeys[:len(topKeys)-1], ", ")), k)
		}
	}
	if v, ok := doc["profiles"]; ok {
		tables, ok := v.(map[string]any)
		if !ok {
			return nil, fail(fmt.Sprintf("must be a table of profiles ([profiles.NAME]), not %s", typeName(v)), "profiles")
		}
		for _, name := range sortedKeys(tables, loc, "profiles") {
			key := []string{"profiles", name}
			switch {
			case name == DefaultProfile || name == DemoProfile:
				return nil, fail(fmt.Sprintf("%q is a built-in profile and cannot be redefined; give your profile another name and set default_profile to it", name), key...)
			case !profileName.MatchString(name):
				return nil, fail("a profile name is letters, digits, '_', '.' and '-', starting with a letter or digit", key...)
			}
			t, ok := tables[name].(map[string]any)
			if !ok {
				return nil, fail(fmt.Sprintf("must be a table ([profiles.%s]), not %s", name, typeName(tables[name])), key...)
			}
			p, err := parseProfile(path, name, t, loc, fail)
			if err != nil {
				return nil, err
			}
			c.profiles[name] = p
			c.rootLines[name] = loc.line([]string{"profiles", name, "root"})
		}
	}
	if v, ok := doc["theme"]; ok {
		s, ok := v.(string)
		if !ok {
			return nil, fail(fmt.Sprintf("must be a string, not %s", typeName(v)), "theme")
		}
		c.Theme = s
	}
	if v, ok := doc["notify"]; ok {
		s, ok := v.(string)
		if !ok {
			return nil, fail(fmt.Sprintf("must be a string, not %s", typeName(v)), "notify")
		}
		if !slices.Contains(NotifyModes, s) {
			return nil, fail(fmt.Sprintf("unknown mode %q (known modes: %s)", s, strings.Join(NotifyModes, ", ")), "notify")
		}
		c.Notify = s
	}
	if v, ok := doc["notify_after"]; ok {
		s, ok := v.(string)
		if !ok {
			return nil, fail(fmt.Sprintf("must be a duration string such as \"10s\" or \"2m\", not %s", typeName(v)), "notify_after")
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return nil, fail(fmt.Sprintf("%q is not a duration (write it as \"10s\", \"90s\" or \"2m\")", s), "notify_after")
		}
		c.NotifyAfter = d
	}
	if v, ok := doc["tui_fps"]; ok {
		n, ok := v.(int64)
		if !ok || n < 1 || n > MaxTUIFPS {
			what := typeName(v)
			if ok {
				what = strconv.FormatInt(n, 10)
			}
			return nil, fail(fmt.Sprintf("must be a whole number of frames a second from 1 to %d (default %d), not %s", MaxTUIFPS, DefaultTUIFPS, what), "tui_fps")
		}
		c.TUIFPS = int(n)
	}
	if v, ok := doc["default_profile"]; ok {
		s, ok := v.(string)
		if !ok {
			return nil, fail(fmt.Sprintf("must be a string, not %s", typeName(v)), "default_profile")
		}
		if _, err := c.Profile(s); err != nil {
			return nil, fail(err.Error(), "default_profile")
		}
		c.DefaultProfile = s
	}
	return c, nil
}

// parseProfile parses the table t of profile name in file, key by key
// (each group of keys by its own method), then checks the keys agree.
func parseProfile(file, name string, t map[string]any, loc *locator, fail func(string, ...string) error) (rig.Profile, error) {
	pp := &profileParser{
		p: rig.Profile{Name: name, Engine: "shell", Placement: rig.PlacementSession},
		t: t, name: name, base: filepath.Dir(file), fail: fail,
	}
	for _, k := range sortedKeys(t, loc, "profiles", name) {
		var err error
		switch k {
		case "engine", "tty", "term", "shell", "shell_interactive", "gate_policy":
			err = pp.runKey(k)
		case "placement", "root", "seed":
			err = pp.placeKey(k)
		case "checkpoint", "checkpoint_max", "checkpoint_exclude", "checkpoint_include":
			err = pp.checkpointKey(k)
		case "agent_command", "agent_allow", "agent_interactive", "agent_gate_timeout":
			err = pp.agentKey(k)
		default:
			err = fail(fmt.Sprintf("unknown key %q (known keys: %s)", k, strings.Join(profileKeys, ", ")), "profiles", name, k)
		}
		if err != nil {
			return pp.p, err
		}
	}
	return pp.p, pp.check()
}

// profileParser parses the keys of one profile table t into p; fail
// words an error at a key (base: the directory of the file, paths are
// relative to).
type profileParser struct {
	p    rig.Profile
	t    map[string]any
	name string
	base string
	fail func(string, ...string) error
}

// failAt is fail at key k of the profile.
func (pp *profileParser) failAt(k, msg string) error { return pp.fail(msg, "profiles", pp.name, k) }

// str is the string value of key k.
func (pp *profileParser) str(k string) (string, error) {
	v := pp.t[k]
	s, ok := v.(string)
	if !ok {
		return "", pp.failAt(k, fmt.Sprintf("must be a string, not %s", typeName(v)))
	}
	return s, nil
}

// runKey parses a key of how turns run: the engine, the terminal, the
// shell, the gate policy.
func (pp *profileParser) runKey(k string) error {
	p, t := &pp.p, pp.t
	switch k {
	case "engine":
		var err error
		if p.Engine, err = pp.str(k); err != nil {
			return err
		}
		if !slices.Contains(engine.Names(), p.Engine) {
			return pp.failAt(k, fmt.Sprintf("unknown engine %q (known engines: %s)", p.Engine, strings.Join(engine.Names(), ", ")))
		}
	case "tty", "shell_interactive":
		b, ok := t[k].(bool)
		if !ok {
			return pp.failAt(k, fmt.Sprintf("must be true or false, not %s", typeName(t[k])))
		}
		if k == "tty" {
			p.NoTTY = !b
		} else {
			p.ShellInteractive = b
		}
	case "term":
		s, err := pp.str(k)
		if err != nil {
			return err
		}
		if s == "" || strings.ContainsAny(s, "\x00=\n") {
			return pp.failAt(k, fmt.Sprintf("must name a terminal type such as \"xterm-256color\", not %q", s))
		}
		p.Term = s
	case "shell":
		s, err := pp.str(k)
		if err != nil {
			return err
		}
		if err := engine.CheckShell(s); err != nil {
			reason := err.Error()
			var se *engine.ShellError
			if errors.As(err, &se) {
				reason = fmt.Sprintf("%q %s", s, se.Reason)
			}
			return pp.failAt(k, reason+`; write the absolute path of an executable shell, such as "/bin/bash"`)
		}
		p.Shell = s
	case "gate_policy":
		arr, ok := t[k].([]any)
		if !ok {
			return pp.failAt(k, fmt.Sprintf("must be an array of strings, not %s", typeName(t[k])))
		}
		p.GatePolicy = make([]string, 0, len(arr)) // empty means: no gates
		for i, v := range arr {
			s, ok := v.(string)
			if !ok {
				return pp.failAt(k, fmt.Sprintf("element %d must be a string, not %s", i+1, typeName(v)))
			}
			p.GatePolicy = append(p.GatePolicy, s)
		}
	}
	return nil
}

// placeKey parses a key of the workspace's place: its placement, its
// root, the seed copied into it.
func (pp *profileParser) placeKey(k string) error {
	p := &pp.p
	s, err := pp.str(k)
	if err != nil {
		return err
	}
	switch k {
	case "placement":
		switch pl := rig.Placement(s); pl {
		case rig.PlacementSession, rig.PlacementExclusive, rig.PlacementShared:
			p.Placement, p.PlacementPinned = pl, true
		default:
			return pp.failAt(k, fmt.Sprintf("must be session, exclusive or shared, not %q", s))
		}
	case "root":
		if p.Root, err = ExpandPath(s, pp.base); err != nil {
			return pp.failAt(k, err.Error())
		}
	case "seed":
		if p.Seed, err = ExpandPath(s, pp.base); err != nil {
			return pp.failAt(k, err.Error())
		}
	}
	return nil
}

// checkpointKey parses a key of the workspace's checkpoints: when, how
// big at most, what is left out and taken back.
func (pp *profileParser) checkpointKey(k string) error {
	p, t := &pp.p, pp.t
	switch k {
	case "checkpoint":
		s, err := pp.str(k)
		if err != nil {
			return err
		}
		switch m := rig.CheckpointMode(s); m {
		case rig.CheckpointTurn, rig.CheckpointStop, rig.CheckpointOff:
			p.Checkpoint = m
		default:
			return pp.failAt(k, fmt.Sprintf("must be turn, stop or off, not %q", s))
		}
	case "checkpoint_max":
		n, err := parseBytes(t[k])
		if err != nil {
			return pp.failAt(k, err.Error())
		}
		p.CheckpointMax = n
	case "checkpoint_exclude", "checkpoint_include":
		arr, ok := t[k].([]any)
		if !ok {
			return pp.failAt(k, fmt.Sprintf("must be an array of strings, not %s", typeName(t[k])))
		}
		var patterns []string
		for i, v := range arr {
			s, ok := v.(string)
			if !ok || s == "" {
				return pp.failAt(k, fmt.Sprintf("element %d must be a non-empty string, not %s", i+1, typeName(v)))
			}
			if reason := checkPattern(s); reason != "" {
				return pp.failAt(k, fmt.Sprintf("element %d %s", i+1, reason))
			}
			patterns = append(patterns, s)
		}
		if k == "checkpoint_exclude" {
			p.CheckpointExclude = patterns
		} else {
			p.CheckpointInclude = patterns
		}
	}
	return nil
}

// agentKey parses a key of an agent engine: its program, the tools it
// uses without a gate, whether it runs interactive, its gates' timeout.
func (pp *profileParser) agentKey(k string) error {
	p, t := &pp.p, pp.t
	switch k {
	case "agent_command":
		s, err := pp.str(k)
		if err != nil {
			return err
		}
		if s == "" || strings.ContainsAny(s, "\x00\n") {
			return pp.failAt(k, fmt.Sprintf("must name the agent's program, such as \"claude\", not %q", s))
		}
		if strings.Contains(s, "/") || strings.HasPrefix(s, "~") {
			if s, err = ExpandPath(s, pp.base); err != nil {
				return pp.failAt(k, err.Error())
			}
		}
		p.AgentCommand = s
	case "agent_allow":
		arr, ok := t[k].([]any)
		if !ok {
			return pp.failAt(k, fmt.Sprintf("must be an array of strings, not %s", typeName(t[k])))
		}
		p.AgentAllow = make([]string, 0, len(arr)) // empty means: every tool asks
		for i, v := range arr {
			s, ok := v.(string)
			if !ok || s == "" {
				return pp.failAt(k, fmt.Sprintf("element %d must be a non-empty string such as \"Read\" or \"Bash(git status:*)\", not %s", i+1, typeName(v)))
			}
			p.AgentAllow = append(p.AgentAllow, s)
		}
	case "agent_interactive":
		b, ok := t[k].(bool)
		if !ok {
			return pp.failAt(k, fmt.Sprintf("must be true or false, not %s", typeName(t[k])))
		}
		p.AgentInteractive = b
	case "agent_gate_timeout":
		s, err := pp.str(k)
		if err != nil {
			return err
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Second || d > 24*time.Hour {
			return pp.failAt(k, fmt.Sprintf("must be a duration from 1s to 24h such as \"10m\", not %q", s))
		}
		p.AgentGateTimeout = d
	}
	return nil
}

// check makes the checks between keys, once all are parsed: placement,
// root and checkpoint agree.
func (pp *profileParser) check() error {
	p := &pp.p
	if p.Placement != rig.PlacementSession && p.Root == "" {
		return pp.failAt("root", fmt.Sprintf("root is required for %s placement", p.Placement))
	}
	if p.Placement == rig.PlacementSession && p.Root != "" {
		return pp.failAt("root", "root needs placement = \"exclusive\" or \"shared\" (session placement gives every session its own directory)")
	}
	if p.Placement == rig.PlacementShared && p.Checkpoint != "" && p.Checkpoint != rig.CheckpointOff {
		return pp.failAt("checkpoint", "a shared workspace is never checkpointed (other sessions write it at the same time); use placement = \"exclusive\", or checkpoint = \"off\"")
	}
	return nil
}

// checkPattern says what is wrong with a checkpoint_exclude or
// checkpoint_include pattern, or "".
func checkPattern(s string) string {
	if len(s) > rig.MaxCheckpointPattern {
		return fmt.Sprintf("is longer than %d bytes", rig.MaxCheckpointPattern)
	}
	if _, err := checkpoint.ParseIgnore([]string{s}); err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return fmt.Sprintf("%q is not a gitignore pattern: %v", s, err)
	}
	return ""
}

// ExpandPath expands a leading "~/" (or a lone "~") to the home directory
// and makes a relative path absolute against base.
func ExpandPath(p, base string) (string, error) {
	if p == "" {
		return "", errors.New("must not be empty")
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot expand ~: %w", err)
		}
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p), nil
}

// Names lists every profile name: the built-ins, then the file's, sorted.
func (c *Config) Names() []string {
	names := []string{DefaultProfile, DemoProfile}
	user := make([]string, 0, len(c.profiles))
	for n := range c.profiles {
		user = append(user, n)
	}
	sort.Strings(user)
	return append(names, user...)
}

// Profile resolves a profile name; "" means the default profile.
func (c *Config) Profile(name string) (rig.Profile, error) {
	if name == "" {
		name = c.DefaultProfile
	}
	switch name {
	case DefaultProfile:
		return rig.DefaultProfile(), nil
	case DemoProfile:
		return rig.DemoProfile(), nil
	}
	if p, ok := c.profiles[name]; ok {
		p.GatePolicy = slices.Clone(p.GatePolicy) // nil stays nil, empty stays empty
		return p, nil
	}
	return rig.Profile{}, &UnknownProfileError{Name: name, Known: c.Names()}
}

// CheckStore refuses a configuration with a profile whose exclusive or
// shared root overlaps dir, the directory the store keeps its files in on
// this machine (see rig.CheckPersistenceOverlap): the root is dir,
// contains it or lies inside it. The refusal is a *Error naming the file
// and the line of the root, wrapping the *rig.PersistenceOverlapError, so
// errors.As reaches both. Profiles are checked in file order; dir "" (a
// store with no local files) is never refused. A root that cannot be
// resolved is left to rig.Define, which reports it when the profile is
// used.
func (c *Config) CheckStore(dir string) error {
	if dir == "" {
		return nil
	}
	names := make([]string, 0, len(c.profiles))
	for n := range c.profiles {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool {
		la, lb := c.rootLines[names[a]], c.rootLines[names[b]]
		if la != lb {
			return la < lb
		}
		return names[a] < names[b]
	})
	for _, name := range names {
		var overlap *rig.PersistenceOverlapError
		if err := rig.CheckPersistenceOverlap(c.profiles[name], dir); errors.As(err, &overlap) {
			return &Error{File: c.Path, Line: c.rootLines[name], Field: "profiles." + name + ".root",
				Reason: overlap.Error(), Err: overlap}
		}
	}
	return nil
}

// sortedKeys returns the keys of the table at prefix in the order they
// appear in the file (then by name), so the first mistake reported is the
// first one in the file.
func sortedKeys(m map[string]any, loc *locator, prefix ...string) []string {
	keys := make([]string, 0, len(m))
	lines := make(map[string]int, len(m))
	for k := range m {
		keys = append(keys, k)
		lines[k] = loc.line(append(slices.Clone(prefix), k))
	}
	sort.Slice(keys, func(a, b int) bool {
		if lines[keys[a]] != lines[keys[b]] {
			return lines[keys[a]] < lines[keys[b]]
		}
		return keys[a] < keys[b]
	})
	return keys
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("a %T", v)
}
