// Package rig is looprig's session runtime. A Rig, defined from a profile
// and a store, creates sessions (NewSession) and restores them from their
// journals after a crash (RestoreSession). A live Session owns its lease,
// its fenced journal, its hub and its root loop, which runs one turn at a
// time through an engine.
//
// docs/ARCHITECTURE.md ("The life of a session", "Leases and fencing")
// describes the behaviour: no reachable session writes without owning its
// lease; restore is a replay-and-rebuild transaction whose commit point is
// RestoreDone; lease loss is latched and fails every later mutation
// closed; shutdown stops loops and process groups, stops the hub with
// SessionStopped, then releases the root lease and the session lease once
// each — bounded: an engine that ignores its interrupt is abandoned (see
// Session.Shutdown).
//
// rig depends only on rig/storage contracts, never on a backend.
package rig

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"looprig/rig/engine"
	"looprig/rig/storage"
)

// Rig creates and restores sessions of one profile on one store.
type Rig struct {
	store      storage.Store
	profile    Profile
	workspaces string
	decider    Decider
	engines    map[string]EngineFactory
	now        func() time.Time
	log        *slog.Logger
	legacy     bool

	checkpointEvery time.Duration
	checkpointBytes int
	turnJournalCap  int64
	attentionQuiet  time.Duration
	releaseTimeout  time.Duration
	engineCfg       engine.Config
	shutdownGrace   time.Duration // see WithShutdownGrace (shutdown.go)
	// materializeProgress is told how far a restore's materialization of
	// a workspace from its checkpoint is (WithMaterializeProgress).
	materializeProgress func(done, total int64)
	handoffPoll         time.Duration                         // see WithHandOffPoll
	promptEchoWait      time.Duration                         // see WithPromptEchoWait
	handoffClock        func() time.Time                      // see WithHandOffClock
	checkpointHook      func(id string, step CheckpointStep)  // see WithCheckpointHook
	checkpointProgress  func(id string, p CheckpointProgress) // see WithCheckpointProgress
}

// EngineFactory builds the engine of a profile.
type EngineFactory func(p Profile) (engine.Engine, error)

// Option configures Define.
type Option func(*Rig)

// WithStore sets the store sessions live in. Required.
func WithStore(s storage.Store) Option { return func(r *Rig) { r.store = s } }

// WithProfile sets the profile (default: DefaultProfile()).
func WithProfile(p Profile) Option { return func(r *Rig) { r.profile = p } }

// WithWorkspaces sets the directory under which session-placement
// workspaces are created, one per session id. Required for session
// placement.
func WithWorkspaces(dir string) Option { return func(r *Rig) { r.workspaces = dir } }

// WithMaterializeProgress has progress told, as bytes written of the
// total, how far a restore is in bringing a missing workspace back from
// its checkpoint (a command draws a progress bar with it). It is called
// from the restoring goroutine and must not block.
func WithMaterializeProgress(progress func(done, total int64)) Option {
	return func(r *Rig) { r.materializeProgress = progress }
}

// WithHandOffPoll sets how often a session looks in the store for a
// request to hand it over (RequestHandOff; default 1 s).
func WithHandOffPoll(d time.Duration) Option { return func(r *Rig) { r.handoffPoll = d } }

// WithPromptEchoWait sets how long Send waits, at what looks like a
// password prompt printed while the terminal still echoes, for the echo
// to go off (default PromptEchoWait).
func WithPromptEchoWait(d time.Duration) Option { return func(r *Rig) { r.promptEchoWait = d } }

// WithHandOffClock sets the clock a holder measures its part of a
// hand-over with: how long it has waited for its running turn, and for
// its taker's next renewal of the request (default time.Now; tests move
// it on).
func WithHandOffClock(now func() time.Time) Option { return func(r *Rig) { r.handoffClock = now } }

// handoffNow is the hand-over clock's time.
func (r *Rig) handoffNow() time.Time {
	if r.handoffClock != nil {
		return r.handoffClock()
	}
	return time.Now()
}

// WithDecider sets who decides about configuration drift on restore
// (default: DefaultDecider()).
func WithDecider(d Decider) Option { return func(r *Rig) { r.decider = d } }

// WithEngine registers an engine under name, for profiles whose Engine is
// name. It overrides a built-in of the same name.
func WithEngine(name string, f EngineFactory) Option {
	return func(r *Rig) { r.engines[name] = f }
}

// WithLogger sets where the runtime logs what it cannot return (release
// failures during shutdown). Default: discard.
func WithLogger(l *slog.Logger) Option { return func(r *Rig) { r.log = l } }

// WithCheckpoints sets how often turn output is checkpointed into the
// journal: at least every interval, and whenever bytes have accumulated
// (defaults 500ms and 64 KiB).
func WithCheckpoints(interval time.Duration, bytes int) Option {
	return func(r *Rig) { r.checkpointEvery, r.checkpointBytes = interval, bytes }
}

// WithTurnJournalCap bounds how many output bytes one turn journals;
// beyond it output is counted as elided (default 16 MiB).
func WithTurnJournalCap(n int64) Option { return func(r *Rig) { r.turnJournalCap = n } }

// WithAttentionQuiet sets the quiet that ends an episode of a turn's
// calls for the user (default AttentionQuiet, 5 s): signals closer together
// are journaled once.
func WithAttentionQuiet(d time.Duration) Option { return func(r *Rig) { r.attentionQuiet = d } }

// WithEngineConfig sets engine tuning (shell grace period, demo pacing,
// line bound). The gate policy comes from the profile.
func WithEngineConfig(c engine.Config) Option { return func(r *Rig) { r.engineCfg = c } }

// WithFingerprintOnly makes new sessions record only a fingerprint of the
// profile, not its manifest, as sessions of older versions did. Restoring
// them under a changed profile fails with *ConfigMismatchError.
func WithFingerprintOnly() Option { return func(r *Rig) { r.legacy = true } }

// Define returns a rig. It fails when the store is missing or the profile
// is invalid (*InvalidProfileError; a Shell engine.CheckShell refuses is
// one), with *UnsafeRootError when the profile's exclusive or shared root
// is "/" or the home directory itself (CheckSensibleRoot), and with
// *PersistenceOverlapError when the profile's exclusive or
// shared root overlaps the store's local directory (storage.Store's
// LocalDir; see CheckPersistenceOverlap).
func Define(opts ...Option) (*Rig, error) {
	r := &Rig{
		profile:         DefaultProfile(),
		decider:         DefaultDecider(),
		engines:         map[string]EngineFactory{},
		now:             time.Now,
		log:             slog.New(slog.NewTextHandler(io.Discard, nil)),
		checkpointEvery: 500 * time.Millisecond,
		checkpointBytes: 64 << 10,
		turnJournalCap:  16 << 20,
		attentionQuiet:  AttentionQuiet,
		releaseTimeout:  5 * time.Second,
		handoffPoll:     handoffPoll,
		promptEchoWait:  PromptEchoWait,
	}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("rig: Define: option %d is nil", i)
		}
		o(r)
	}
	if r.store == nil {
		return nil, errors.New("rig: Define needs a store (WithStore)")
	}
	if r.handoffPoll <= 0 {
		r.handoffPoll = handoffPoll
	}
	if err := r.profile.validate(); err != nil {
		return nil, err
	}
	if r.profile.Placement == PlacementSession && r.workspaces == "" {
		return nil, &InvalidProfileError{Profile: r.profile.Name, Field: "placement",
			Reason: "session placement needs a workspaces directory (WithWorkspaces)"}
	}
	if err := CheckSensibleRoot(r.profile); err != nil {
		return nil, err
	}
	if err := CheckPersistenceOverlap(r.profile, r.store.LocalDir()); err != nil {
		return nil, err
	}
	if r.profile.Shell != "" {
		if err := engine.CheckShell(r.profile.Shell); err != nil {
			return nil, &InvalidProfileError{Profile: r.profile.Name, Field: "shell", Reason: err.Error(), Err: err}
		}
	}
	return r, nil
}

// Profile returns the rig's profile.
func (r *Rig) Profile() Profile { return r.profile }

// newEngine builds the profile's engine: a registered factory, else a
// built-in. An unknown name is *engine.UnknownEngineError.
func (r *Rig) newEngine() (engine.Engine, error) {
	if f, ok := r.engines[r.profile.Engine]; ok {
		return f(r.profile)
	}
	cfg := r.engineCfg
	cfg.GatePolicy = r.profile.gatePolicy()
	cfg.NoTTY, cfg.Term, cfg.Shell = r.profile.NoTTY, r.profile.term(), r.profile.shell()
	cfg.ShellInteractive = r.profile.ShellInteractive
	if p := r.profile; p.AgentCommand != "" {
		cfg.AgentCommand = p.AgentCommand
	}
	if p := r.profile; p.AgentAllow != nil {
		cfg.AgentAllow = p.AgentAllow
	}
	if p := r.profile; p.AgentGateTimeout > 0 {
		cfg.AgentGateTimeout = p.AgentGateTimeout
	}
	cfg.AgentInteractive = cfg.AgentInteractive || r.profile.AgentInteractive
	return engine.Lookup(r.profile.Engine, cfg)
}

// engineKnown reports whether the profile's engine name resolves, without
// building it.
func (r *Rig) engineKnown() error {
	if _, ok := r.engines[r.profile.Engine]; ok {
		return nil
	}
	_, err := engine.Lookup(r.profile.Engine, engine.Config{})
	return err
}
