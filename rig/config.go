package rig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"looprig/rig/engine"
	"looprig/rig/event"
)

// Placement says where a session's workspace is and who may write it.
type Placement string

const (
	// PlacementSession gives every session its own directory, named by its
	// id, under the rig's workspaces directory.
	PlacementSession Placement = "session"
	// PlacementExclusive runs sessions in Root, one at a time: the root is
	// guarded by a lease named from its canonical path.
	PlacementExclusive Placement = "exclusive"
	// PlacementShared runs sessions in Root without a lease: humans, tools
	// and other sessions may write it too.
	PlacementShared Placement = "shared"
)

// Profile is what a rig is defined from.
type Profile struct {
	// Name names the profile ("default", "demo", or a user profile).
	Name string
	// Engine names the engine of the root loop ("shell", "demo", or one
	// registered with WithEngine).
	Engine string
	// Placement and Root say where the workspace is; Root is required for
	// exclusive and shared placement and ignored for session placement.
	Placement Placement
	Root      string
	// PlacementPinned says the profile's configuration names its
	// placement (a profile's placement key). A profile that does not
	// places each session where the session was created: a restore uses
	// the placement and root the session recorded (AsRecorded), so
	// only a profile that pins a different one is drift.
	PlacementPinned bool
	// GatePolicy lists the command patterns the shell engine asks about
	// before running. Nil means engine.DefaultGatePolicy.
	GatePolicy []string
	// Seed is a directory copied into each new session's workspace, unless
	// NewSession names another with WithSeedSnapshot. Optional.
	Seed string
	// NoTTY runs the shell engine's turns on pipes with stdin on /dev/null
	// instead of a pseudo-terminal (engine.Config.NoTTY): for byte-exact
	// scripting. Term is TERM under a pseudo-terminal ("" means
	// engine.DefaultTerm).
	NoTTY bool
	Term  string
	// Shell runs the shell engine's turns, as "Shell -c INPUT": an absolute
	// path to an executable file, which Define checks ("" means
	// engine.DefaultShell, /bin/sh). Sessions record it in their manifest.
	// The looprig command fills it in from the configuration file, else
	// from $SHELL (engine.UserShell); the runtime never reads the
	// environment for it.
	Shell string
	// ShellInteractive runs the shell engine's turns as an interactive
	// shell, "Shell -i -c INPUT" (engine.Config.ShellInteractive), which
	// reads the user's rc file: their aliases and functions. Recorded in
	// the manifest (info-level drift).
	ShellInteractive bool
	// Checkpoint says when the workspace is checkpointed into the store
	// ("" means CheckpointTurn, but CheckpointOff for shared placement,
	// which allows only that).
	// CheckpointMax bounds a checkpoint's bytes (0 means
	// DefaultCheckpointMax); over it the checkpoint is skipped, visibly.
	// CheckpointExclude lists patterns (gitignore syntax) left out, beside
	// the workspace's own .looprigignore and .gitignore files;
	// CheckpointInclude patterns take back what any rule excluded, the
	// default secrets too (checkpoint.Filter).
	Checkpoint        CheckpointMode
	CheckpointMax     int64
	CheckpointExclude []string
	CheckpointInclude []string
	// AgentCommand, AgentAllow and AgentGateTimeout configure an agent
	// engine ("claude"): its program, the tools it uses without a gate,
	// and how long a tool's gate waits before the tool is denied
	// (engine.Config's fields of the same names; zero values mean theirs).
	AgentCommand     string
	AgentAllow       []string
	AgentGateTimeout time.Duration
	// AgentInteractive runs the agent's own full-screen interface as each
	// turn, on its terminal (engine.Config.AgentInteractive).
	AgentInteractive bool
}

// term is p.Term or the engine's default.
func (p Profile) term() string {
	if p.Term == "" {
		return engine.DefaultTerm
	}
	return p.Term
}

// shell is p.Shell or the engine's default.
func (p Profile) shell() string {
	if p.Shell == "" {
		return engine.DefaultShell
	}
	return p.Shell
}

// tty is the manifest's spelling of !p.NoTTY.
func (p Profile) tty() string {
	if p.NoTTY {
		return "false"
	}
	return "true"
}

// DefaultProfile runs turns with /bin/sh (Shell unset) in a per-session
// workspace.
func DefaultProfile() Profile {
	return Profile{Name: "default", Engine: "shell", Placement: PlacementSession}
}

// DemoProfile runs the demo engine, which needs no external program.
func DemoProfile() Profile {
	return Profile{Name: "demo", Engine: "demo", Placement: PlacementSession, PlacementPinned: true}
}

func (p Profile) gatePolicy() []string {
	if p.GatePolicy == nil {
		return slices.Clone(engine.DefaultGatePolicy)
	}
	return p.GatePolicy
}

func (p Profile) validate() error {
	bad := func(field, reason string) error {
		return &InvalidProfileError{Profile: p.Name, Field: field, Reason: reason}
	}
	switch {
	case p.Name == "":
		return bad("name", "empty")
	case p.Engine == "":
		return bad("engine", "empty")
	}
	switch p.Placement {
	case PlacementSession:
	case PlacementExclusive, PlacementShared:
		if p.Root == "" {
			return bad("root", "required for "+string(p.Placement)+" placement")
		}
	default:
		return bad("placement", "must be session, exclusive or shared, not "+strconvQuote(string(p.Placement)))
	}
	return p.validateCheckpoint()
}

// Manifest is the recorded form of a profile: one string per field that
// matters to a restore. It is journaled in SessionStarted.
type Manifest map[string]string

// Manifest fields and how much a change of each matters.
var manifestLevels = map[string]string{
	"profile":     event.LevelInfo,
	"engine":      event.LevelWarn,
	"placement":   event.LevelWarn,
	"root":        event.LevelWarn,
	"gate_policy": event.LevelInfo,
	"tty":         event.LevelInfo,
	"term":        event.LevelInfo,
	"shell":       event.LevelInfo,
	// shell_interactive: whether turns read the user's rc file.
	"shell_interactive": event.LevelInfo,
}

// LegacyShell is the shell of sessions recorded before the manifest named
// one: every turn ran in it then. Assess reads a manifest without "shell"
// as naming it.
const LegacyShell = engine.DefaultShell

// legacyFields are the values of manifest fields that older versions did
// not record but ran with.
var legacyFields = map[string]string{"shell": LegacyShell, "shell_interactive": "false"}

// manifest records p. root is the canonical root ("" for session
// placement).
func (p Profile) manifest(root string) Manifest {
	return Manifest{
		"profile":     p.Name,
		"engine":      p.Engine,
		"placement":   string(p.Placement),
		"root":        root,
		"gate_policy": strings.Join(p.gatePolicy(), "\n"),
		"tty":         p.tty(),
		"term":        p.term(),
		"shell":       p.shell(),
		// A manifest from before it was recorded reads as "false", which
		// those sessions ran with (legacyFields).
		"shell_interactive": strconv.FormatBool(p.ShellInteractive),
	}
}

// Fingerprint is the hex SHA-256 of the manifest's canonical form.
func (m Manifest) Fingerprint() string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(m[k]))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Assessment is the drift between a session's recorded manifest and the
// live rig's.
type Assessment struct {
	Changes []event.Change
}

// Assess compares persisted to live, field by field, in field order. A
// field persisted lacks that older versions did not record (legacyFields:
// shell) counts as the value they ran with (LegacyShell).
func Assess(persisted, live Manifest) Assessment {
	persisted = persisted.withLegacyFields()
	fields := map[string]bool{}
	for k := range persisted {
		fields[k] = true
	}
	for k := range live {
		fields[k] = true
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	var a Assessment
	for _, k := range names {
		if persisted[k] == live[k] {
			continue
		}
		level, ok := manifestLevels[k]
		if !ok {
			level = event.LevelWarn // a field this version does not know: be careful
		}
		a.Changes = append(a.Changes, event.Change{Field: k, Persisted: persisted[k], Live: live[k], Level: level})
	}
	return a
}

// withLegacyFields returns a copy of m in which the fields older versions
// did not record hold what they ran with.
func (m Manifest) withLegacyFields() Manifest {
	out := make(Manifest, len(m)+len(legacyFields))
	maps.Copy(out, m)
	for k, v := range legacyFields {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// fingerprintMatches reports whether fp is m's fingerprint, or that of m as
// an older version recorded it: without the fields it did not record, when
// m holds the values it ran with (legacyFields).
func (m Manifest) fingerprintMatches(fp string) bool {
	if fp == m.Fingerprint() {
		return true
	}
	old := maps.Clone(m)
	for k, v := range legacyFields {
		if old[k] != v {
			return false
		}
		delete(old, k)
	}
	return fp == old.Fingerprint()
}

// Drifted reports whether anything changed.
func (a Assessment) Drifted() bool { return len(a.Changes) > 0 }

// Warn reports whether any change is warn-level.
func (a Assessment) Warn() bool {
	for _, c := range a.Changes {
		if c.Level == event.LevelWarn {
			return true
		}
	}
	return false
}

// Decision is a decider's answer about drift.
type Decision struct {
	Accept bool
	// Source names who decided; it is recorded in ConfigurationAdopted.
	Source string
	// Reason explains a rejection.
	Reason string
}

// Decider decides whether a session whose configuration drifted may be
// restored under the live rig. It is only asked when something changed.
type Decider interface {
	Decide(ctx context.Context, a Assessment) (Decision, error)
}

// DeciderFunc adapts a function to Decider.
type DeciderFunc func(ctx context.Context, a Assessment) (Decision, error)

// Decide calls f.
func (f DeciderFunc) Decide(ctx context.Context, a Assessment) (Decision, error) { return f(ctx, a) }

// DefaultDecider accepts info-level drift (a renamed profile, a changed
// gate policy) and rejects warn-level drift (engine, placement or root).
func DefaultDecider() Decider {
	return DeciderFunc(func(_ context.Context, a Assessment) (Decision, error) {
		if a.Warn() {
			return Decision{Source: "default", Reason: "warn-level configuration drift needs an explicit accept"}, nil
		}
		return Decision{Accept: true, Source: "default"}, nil
	})
}

// AcceptAll accepts any drift and records source as who accepted it (for
// example "cli --accept-drift" or "tui confirm").
func AcceptAll(source string) Decider {
	return DeciderFunc(func(context.Context, Assessment) (Decision, error) {
		return Decision{Accept: true, Source: source}, nil
	})
}

// canonicalRoot is the absolute, symlink-free path of root.
func canonicalRoot(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

func strconvQuote(s string) string { return `"` + s + `"` }
