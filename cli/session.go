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
}

func (pf *profileFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&pf.rig, "rig", "", "profile name")
	fs.StringVar(&pf.placement, "placement", "", "session | exclusive | shared")
	fs.StringVar(&pf.root, "root", "", "workspace root of exclusive and shared placement")
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
}

// acceptDriftSource is who --accept-drift says accepted drift, as
// ConfigurationAdopted records it.
const acceptDriftSource = "cli --accept-drift"

// restoreSession resolves input and restores that session with the
// profile flags given. Every failure to find the session is a
// *rig.RestoreError{discovery_failed}, except malformed or ambiguous input
// (usage errors).
func (c *call) restoreSession(input string) (*rig.Session, error) {
	ctx, st, cfg := c.ctx, c.st, c.cfg
	id, err := rig.FindSession(ctx, st, input)
	if err != nil {
		var unknown *rig.UnknownSessionError
		if errors.As(err, &unknown) {
			return nil, &rig.RestoreError{Kind: rig.RestoreDiscoveryFailed, Cause: err}
		}
		return nil, err
	}
	var p rig.Profile
	if c.profile.rig != "" {
		if p, err = cfg.Profile(c.profile.rig); err != nil {
			return nil, err
		}
	} else {
		lookup := func(name string) (rig.Profile, bool) {
			p, err := cfg.Profile(name)
			return p, err == nil
		}
		if p, err = rig.ProfileFor(ctx, st, id, lookup, cfg.Names()); err != nil {
			return nil, err
		}
	}
	if p, err = c.profile.apply(c.cmd, p); err != nil {
		return nil, err
	}
	var d rig.Decider
	if c.acceptDrift {
		by := acceptDriftSource
		if c.acceptedBy != "" {
			by = c.acceptedBy
		}
		d = rig.AcceptAll(by)
	}
	// A workspace brought back from its checkpoint shows its progress on
	// a terminal when it takes more than a second.
	bar := newProgressBar(c.stderr, "bringing the workspace back from its checkpoint")
	defer bar.finish()
	r, err := defineRig(st, p, d, rig.WithMaterializeProgress(bar.update))
	if err != nil {
		return nil, err
	}
	var opts []rig.RestoreOption
	if c.onlyCrashed {
		opts = append(opts, rig.OnlyIfCrashed())
	}
	return r.RestoreSession(ctx, id, opts...)
}
