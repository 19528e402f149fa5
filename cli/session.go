package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"looprig/config"
	"looprig/fsstore"
	"looprig/natsstore"
	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// storeDir is --store, else $LOOPRIG_STORE, else $XDG_STATE_HOME/looprig,
// else ~/.local/state/looprig. A nats:// URL names a NATS store.
func (e *env) storeDir() (string, error) {
	if e.storeSet {
		if e.store == "" {
			return "", usageErr(e.cmd, "--store needs a directory")
		}
		return e.store, nil
	}
	if d := os.Getenv("LOOPRIG_STORE"); d != "" {
		return d, nil
	}
	return defaultStateDir()
}

// defaultStateDir is $XDG_STATE_HOME/looprig, else ~/.local/state/looprig.
func defaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "looprig"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the default store (no home directory); use --store DIR: %w", err)
	}
	return filepath.Join(home, ".local", "state", "looprig"), nil
}

// openedStore is a store a command opened: the storage contract, which is
// everything rig and the TUI use of it, and what this machine keeps beside
// it. Its LocalDir is where this machine keeps the store's local files
// (tui.log, the workspaces): rig.Define refuses an exclusive or shared
// root that overlaps it.
type openedStore struct {
	storage.Store
	// name names the store as --store does (a directory, or the redacted
	// nats:// URL), for messages and for helper processes.
	name string
	// local is its LocalDir: an fsstore's own directory; for a NATS
	// store, shared by machines, the directory under the local state
	// directory where workspaces and logs stay on this machine (a root
	// containing it could delete the workspaces of every session created
	// here, and the TUI's log).
	local string
	close func() error
}

// Dir names the store as --store does.
func (s *openedStore) Dir() string { return s.name }

// LocalDir is where this machine keeps the store's local files
// (storage.Store).
func (s *openedStore) LocalDir() string { return s.local }

// WatchKey passes storage.KeyWatcher through to the store, when it has
// it: a live session then waits for a hand-over request without reading
// its key every second.
func (s *openedStore) WatchKey(key string) (<-chan struct{}, func(), error) {
	if w, ok := s.Store.(storage.KeyWatcher); ok {
		return w.WatchKey(key)
	}
	return nil, nil, fmt.Errorf("store %s cannot watch keys", s.name)
}

// DurableStamp passes storage.DurableStamper through to the store, when
// it has it: a search then reads no lease while the store stands still.
// Without it no stamp is trusted (the search lists).
func (s *openedStore) DurableStamp(ctx context.Context) (string, bool, error) {
	if d, ok := s.Store.(storage.DurableStamper); ok {
		return d.DurableStamp(ctx)
	}
	return "", false, nil
}

// WorkspacesDir holds the per-session workspaces.
func (s *openedStore) WorkspacesDir() string { return filepath.Join(s.local, "workspaces") }

// Close closes the store; closing it again does nothing.
func (s *openedStore) Close() error {
	closeStore := s.close
	s.close = func() error { return nil }
	return closeStore()
}

// isStoreURL reports whether --store names a NATS server rather than a
// directory.
func isStoreURL(store string) bool {
	return strings.HasPrefix(store, "nats://") || strings.HasPrefix(store, "tls://")
}

// openStore opens (creating on first use) the store: a directory, or
// nats://host:port[/prefix] (credentials from $NATS_CREDS or $NATS_TOKEN,
// never from the command line).
func (e *env) openStore() (*openedStore, error) {
	dir, err := e.storeDir()
	if err != nil {
		return nil, err
	}
	if isStoreURL(dir) {
		return openNATSStore(dir)
	}
	st, err := fsstore.Open(dir)
	if err != nil {
		return nil, &StoreError{Path: dir, Err: err}
	}
	return &openedStore{Store: st, name: st.Dir(), local: st.LocalDir(), close: st.Close}, nil
}

// redactURL drops any user or password from a store URL, for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	return u.String()
}

func openNATSStore(storeURL string) (*openedStore, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := natsstore.Open(ctx, storeURL)
	if err != nil {
		return nil, &StoreError{Path: redactURL(storeURL), Err: err}
	}
	local, err := natsLocalDir(st.URL())
	if err != nil {
		st.Close()
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(local, "workspaces"), 0o700); err != nil {
		st.Close()
		return nil, &StoreError{Path: local, Err: err}
	}
	return &openedStore{Store: st, name: st.URL(), local: local, close: st.Close}, nil
}

// natsLocalDir is where this machine keeps the files of the NATS store at
// storeURL (redacted, as natsstore.Store.URL gives it): under the local
// state directory, named by the server and prefix.
func natsLocalDir(storeURL string) (string, error) {
	state, err := defaultStateDir()
	if err != nil {
		return "", err
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, strings.TrimPrefix(strings.TrimPrefix(storeURL, "nats://"), "tls://"))
	return filepath.Join(state, "nats", name), nil
}

// localStoreDir is the LocalDir the store that --store names will have,
// worked out without opening it; "" when it cannot be (openStore reports
// why).
func (e *env) localStoreDir() string {
	dir, err := e.storeDir()
	if err != nil {
		return ""
	}
	if !isStoreURL(dir) {
		return dir
	}
	u, err := url.Parse(dir)
	if err != nil || u.User != nil || u.Host == "" {
		return ""
	}
	redacted := u.Scheme + "://" + u.Host // as natsstore.Store.URL gives it
	if prefix := strings.Trim(u.Path, "/"); prefix != "" {
		redacted += "/" + prefix
	}
	local, err := natsLocalDir(redacted)
	if err != nil {
		return ""
	}
	return local
}

// loadConfig loads --config, else the default file when it exists, and
// refuses a profile whose root overlaps the store's local directory (a
// *config.Error at the root's line wrapping *rig.PersistenceOverlapError):
// like every mistake in the file, that is an error for every command.
// rig.Define checks again, for --root and for a store whose directory
// could not be worked out here.
func (e *env) loadConfig() (*config.Config, error) {
	cfg, err := e.readConfig()
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckStore(e.localStoreDir()); err != nil {
		return nil, err
	}
	return cfg, nil
}

// readConfig reads --config, else the default file when it exists.
func (e *env) readConfig() (*config.Config, error) {
	if e.configSet {
		if e.configPath == "" {
			return nil, usageErr(e.cmd, "--config needs a file")
		}
		return config.Load(e.configPath, true)
	}
	path, err := config.DefaultPath()
	if err != nil {
		return config.Builtin(), nil
	}
	return config.Load(path, false)
}

// profileFlags are the profile choices of new, run and restore.
type profileFlags struct {
	rig       string
	placement string
	root      string
	// scratch and dir are new's (and host --new's): a private directory
	// in the store, or the directory the session lives in when nothing
	// else says (placeNew).
	scratch bool
	dir     string
	// worktree is new's (and host --new's) --worktree [BRANCH].
	worktree worktreeFlag
}

func (pf *profileFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&pf.rig, "rig", "", "profile name")
	fs.StringVar(&pf.placement, "placement", "", "session | exclusive | shared")
	fs.StringVar(&pf.root, "root", "", "workspace root of exclusive and shared placement")
}

// addNew adds the flags of a new session's place.
func (pf *profileFlags) addNew(fs *flag.FlagSet) {
	pf.add(fs)
	fs.BoolVar(&pf.scratch, "scratch", false, "a private directory in the store instead of the current directory")
	fs.Var(&pf.worktree, "worktree", "a git worktree of its own beside the repository, on a new branch (--worktree BRANCH; default looprig/<short id>)")
}

// placeNew is where a new session of profile p lives: --placement and
// --root as given (--root alone, with a profile that pins no placement:
// exclusive there), else rig.PlaceNew: --scratch, the placement p pins,
// else dir (where new ran; "" is the current directory).
func (pf *profileFlags) placeNew(cmd string, p rig.Profile, dir string) (rig.Profile, error) {
	given := pf.placement != "" || pf.root != ""
	switch {
	case pf.scratch && given:
		return p, usageErr(cmd, "--scratch does not go with --placement or --root")
	case given:
		if pf.placement == "" && !p.PlacementPinned {
			p.Placement = rig.PlacementExclusive
		}
		return pf.apply(cmd, p)
	case pf.scratch || p.PlacementPinned:
		return rig.PlaceNew(p, "", pf.scratch), nil
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return p, usageErr(cmd, fmt.Sprintf("cannot tell the current directory (%v): give --root DIR, or --scratch", err))
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return p, usageErr(cmd, fmt.Sprintf("%s: %v", dir, err))
	}
	return rig.PlaceNew(p, abs, false), nil
}

// apply overrides the placement and root of p.
func (pf *profileFlags) apply(cmd string, p rig.Profile) (rig.Profile, error) {
	root := ""
	if pf.root != "" {
		abs, err := filepath.Abs(pf.root)
		if err != nil {
			return p, usageErr(cmd, fmt.Sprintf("--root %s: %v", pf.root, err))
		}
		root = abs
	}
	switch pl := rig.Placement(pf.placement); pl {
	case "":
		if root != "" {
			if p.Placement == rig.PlacementSession {
				return p, usageErr(cmd, fmt.Sprintf("--root needs --placement exclusive or shared (profile %q places each session in its own directory)", p.Name))
			}
			p.Root = root
		}
	case rig.PlacementSession:
		if root != "" {
			return p, usageErr(cmd, "--root does not go with --placement session (each session gets its own directory)")
		}
		p.Placement, p.Root = pl, ""
	case rig.PlacementExclusive, rig.PlacementShared:
		if root == "" && (p.Placement == rig.PlacementSession || p.Root == "") {
			return p, usageErr(cmd, fmt.Sprintf("--placement %s needs --root DIR", pl))
		}
		p.Placement = pl
		if root != "" {
			p.Root = root
		}
	default:
		return p, usageErr(cmd, fmt.Sprintf("--placement must be session, exclusive or shared, not %q", pf.placement))
	}
	return p, nil
}

// defineRig defines the rig of profile p on st. A profile that names no
// shell runs turns in the user's: $SHELL when it is the absolute path of an
// executable file, else /bin/sh (engine.UserShell); the rig's profile
// (Rig.Profile) names the one chosen.
func defineRig(st *openedStore, p rig.Profile, d rig.Decider, extra ...rig.Option) (*rig.Rig, error) {
	if p.Shell == "" {
		p.Shell = engine.UserShell(os.Getenv("SHELL"))
	}
	opts := []rig.Option{rig.WithStore(st), rig.WithProfile(p), rig.WithWorkspaces(st.WorkspacesDir())}
	if d != nil {
		opts = append(opts, rig.WithDecider(d))
	}
	if testRigOptions != nil { // end-to-end test builds only
		opts = append(opts, testRigOptions()...)
	}
	return rig.Define(append(opts, extra...)...)
}

// findExisting resolves input to a session that exists in the store (it
// has a journal or a catalog entry), and returns its journal's tip.
func (c *call) findExisting(input string) (uuid.UUID, uint64, error) {
	id, err := rig.FindSession(c.ctx, c.st, input)
	if err != nil {
		return id, 0, err
	}
	ok, tip, err := rig.SessionExists(c.ctx, c.st, id)
	if err != nil {
		return id, 0, err
	}
	if !ok {
		return id, 0, &NotFoundError{Input: input, Store: c.st.Dir()}
	}
	return id, tip, nil
}

// restoreFlags registers the flags run and restore share.
func restoreFlags(fs *flag.FlagSet, o *opts) {
	o.profile.add(fs)
	fs.BoolVar(&o.acceptDrift, "accept-drift", false, "accept configuration drift")
	workspaceFlags(fs, o)
}

// workspaceFlags registers the flags that resolve a workspace that
// diverged from the session's checkpoints (run, restore, take, host).
func workspaceFlags(fs *flag.FlagSet, o *opts) {
	fs.BoolVar(&o.keepWorkspace, "keep-workspace", false, "if the workspace directory has changes no checkpoint has, keep it as the session's workspace (journaled as an adoption)")
	fs.BoolVar(&o.useCheckpoint, "use-checkpoint", false, "if the workspace directory has changes no checkpoint has, move it aside (never deleted) and bring the last checkpoint back")
}

// workspaceChoice is what the workspace flags ask for; both at once is a
// usage error.
func (c *call) workspaceChoice() (rig.WorkspaceChoice, error) {
	switch {
	case c.keepWorkspace && c.useCheckpoint:
		return "", usageErr(c.cmd, "--keep-workspace and --use-checkpoint contradict each other: give one")
	case c.keepWorkspace:
		return rig.WorkspaceKeep, nil
	case c.useCheckpoint:
		return rig.WorkspaceUseCheckpoint, nil
	}
	return rig.WorkspaceRefuse, nil
}

// workspaceArgs repeats the workspace flags given, for a host.
func (c *call) workspaceArgs() []string {
	switch {
	case c.keepWorkspace:
		return []string{"--keep-workspace"}
	case c.useCheckpoint:
		return []string{"--use-checkpoint"}
	}
	return nil
}

// acceptDriftSource is who --accept-drift says accepted drift, as
// ConfigurationAdopted records it.
const acceptDriftSource = "cli --accept-drift"

// acceptRootSource is who accepted a move to the root --root named.
const acceptRootSource = "cli --root"

// acceptRootMove accepts drift whose only warn-level change is the root:
// --root asked for it, as a session travels to a machine where its
// project lives elsewhere. The session moves there (rig/moved.go: a
// missing or empty directory gets its last checkpoint; one holding files
// is used only when it is that checkpoint, else refused as diverged). Any
// other warn-level change still needs --accept-drift.
func acceptRootMove() rig.Decider {
	return rig.DeciderFunc(func(_ context.Context, a rig.Assessment) (rig.Decision, error) {
		for _, ch := range a.Changes {
			if ch.Level == event.LevelWarn && ch.Field != "root" {
				return rig.Decision{Source: acceptRootSource, Reason: "warn-level configuration drift other than the root needs an explicit accept"}, nil
			}
		}
		return rig.Decision{Accept: true, Source: acceptRootSource}, nil
	})
}

// recordedProfile is the profile session id restores with here when no
// --rig says otherwise: the one it recorded, from the configuration
// (rig.ProfileFor; *rig.ProfileGoneError when it is not defined here).
func (c *call) recordedProfile(id uuid.UUID) (rig.Profile, error) {
	lookup := func(name string) (rig.Profile, bool) {
		p, err := c.cfg.Profile(name)
		return p, err == nil
	}
	return rig.ProfileFor(c.ctx, c.st, id, lookup, c.cfg.Names())
}

// restoreSession resolves input and restores that session with the
// profile flags given. Every failure to find the session is a
// *rig.RestoreError{discovery_failed}, except malformed or ambiguous input
// (usage errors).
func (c *call) restoreSession(input string) (*rig.Session, error) {
	ctx, st := c.ctx, c.st
	id, err := rig.FindSession(ctx, st, input)
	if err != nil {
		var unknown *rig.UnknownSessionError
		if errors.As(err, &unknown) {
			return nil, &rig.RestoreError{Kind: rig.RestoreDiscoveryFailed, Cause: err}
		}
		return nil, err
	}
	// A workspace brought back from its checkpoint shows its progress on
	// a terminal when it takes more than a second; a host started by a
	// client reports it to that client, which shows it the same way.
	progress := c.materializeProgress()
	defer progress.finish()
	update := progress.update
	if testMaterializeProgress != nil { // end-to-end test builds only
		update = testMaterializeProgress(update)
	}
	r, opts, err := c.restoreRig(id, rig.WithMaterializeProgress(update))
	if err != nil {
		return nil, err
	}
	return r.RestoreSession(ctx, id, opts...)
}

// restoreRig is the rig session id restores with as the restore flags say
// (--rig, else the profile it recorded, placed where the session recorded
// unless it pins a placement; --placement and --root;
// --accept-drift) and the restore options of the workspace flags.
func (c *call) restoreRig(id uuid.UUID, ropts ...rig.Option) (*rig.Rig, []rig.RestoreOption, error) {
	var p rig.Profile
	var err error
	if c.profile.rig != "" {
		if p, err = c.cfg.Profile(c.profile.rig); err != nil {
			return nil, nil, err
		}
		p = rig.AsRecorded(c.ctx, c.st, id, p)
	} else if p, err = c.recordedProfile(id); err != nil {
		return nil, nil, err
	}
	if p, err = c.profile.apply(c.cmd, p); err != nil {
		return nil, nil, err
	}
	var d rig.Decider
	switch {
	case c.acceptDrift:
		by := acceptDriftSource
		if c.acceptedBy != "" {
			by = c.acceptedBy
		}
		d = rig.AcceptAll(by)
	case c.profile.root != "":
		d = acceptRootMove()
	}
	r, err := defineRig(c.st, p, d, ropts...)
	if err != nil {
		return nil, nil, err
	}
	choice, err := c.workspaceChoice()
	if err != nil {
		return nil, nil, err
	}
	opts := []rig.RestoreOption{rig.OnDiverged(choice)}
	if c.onlyCrashed {
		opts = append(opts, rig.OnlyIfCrashed())
	}
	return r, opts, nil
}
