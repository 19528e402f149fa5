package rig

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// SessionState is what a listing shows of a session.
type SessionState string

const (
	StateLive    SessionState = "live"    // held by this process
	StateHeld    SessionState = "held"    // held by another process
	StateIdle    SessionState = "idle"    // shut down cleanly
	StateCrashed SessionState = "crashed" // no holder, and it was not shut down
	StateBroken  SessionState = "broken"  // its records cannot be trusted; Reason says why
)

// Glyph is the mark every presenter shows a state by, beside its word, so
// that a state reads without colour: ● live, ◆ held, ○ idle, ✗ crashed,
// ⊘ broken; ? for a state it does not know.
func (s SessionState) Glyph() string {
	switch s {
	case StateLive:
		return "●"
	case StateHeld:
		return "◆"
	case StateIdle:
		return "○"
	case StateCrashed:
		return "✗"
	case StateBroken:
		return "⊘"
	}
	return "?"
}

// SessionInfo is one row of a listing.
type SessionInfo struct {
	ID     string
	State  SessionState
	Reason string // why a session is broken (or stopped, crashed; for a held one: NotAnsweringReason)
	// NotAnswering: held by a process on this machine that is stopped
	// (WithLiveness said LivenessStopped); Reason says so.
	NotAnswering bool
	Title        string
	Profile      string
	Engine       string
	Shell        string          // the shell its turns run in (LegacyShell for entries that predate it)
	Epoch        uint64          // latest lease epoch
	Holder       *storage.Holder // set when held
	OpenTurn     string
	Turn         int
	OpenGate     string
	// TurnSince and GateSince: when the open turn started and the open
	// gate opened (zero when none is, or the entry predates them).
	TurnSince, GateSince time.Time
	// GatePrompt: the open gate's question (at most MaxCatalogPrompt
	// bytes of it).
	GatePrompt string
	// LastEnd: how the last turn that ended ended (nil before any did).
	LastEnd *TurnEnd
	// Attention: what the running turn asked of the user since the user
	// last looked (nil when nothing is pending, or the entry predates it).
	Attention *Attention
	// Checkpoint: the latest checkpoint of the workspace (nil before any,
	// or when the entry predates checkpoints).
	Checkpoint *CatalogCheckpoint
	// Conversation: an agent session's conversation (nil for other
	// engines, or when the entry predates it).
	Conversation *CatalogConversation
	// Placement and Root: where the session works (Root: an exclusive or
	// shared root; "" for a private directory in the store, and in entries
	// older than them).
	Placement Placement
	Root      string
	// Worktree: the git worktree looprig added for it (nil for any other
	// directory).
	Worktree *CatalogWorktree
	// ForkedFrom: the session and turn a fork came from (nil for a
	// session that is not one, or an entry that predates forks).
	ForkedFrom *event.ForkedFrom
	// Checkpointing: how far the checkpoint its holder is taking is, as
	// the holder last wrote it (nil when it takes none; only a held
	// session's is listed).
	Checkpointing *CheckpointProgress
	LastSeq       uint64
	Turns         int
	Created       time.Time
	Updated       time.Time
}

// ShortID is the first eight characters of the id.
func (i SessionInfo) ShortID() string { return ShortID(i.ID) }

// ShortID is the first eight characters of id.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// ListSessions lists every session of the store from its catalog entries
// and lease probes, without taking any lease and without reading journals
// (but the first few records of one whose entry was left creating, see
// creationRecorded): its cost is one KV read per session plus the probes.
// A session whose entry cannot be read is listed as broken with the
// reason, never fails the listing. Sessions held by this process (pid and
// host) are live, and, with WithServing, those a process on this machine
// serves. docs/ARCHITECTURE.md ("Listing") gives the states.
func ListSessions(ctx context.Context, store storage.Store, opts ...ListOption) ([]SessionInfo, error) {
	ids, names, served, err := startListing(ctx, store, opts)
	if err != nil {
		return nil, err
	}
	host, pid := served.host, served.pid
	// The probes and the catalog reads are independent: run them side by
	// side, the reads spread over a few goroutines (each is a few system
	// calls and a small decode).
	var probes []storage.LeaseStatus
	var probeErrs []error
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		probes, probeErrs = probeAll(ctx, store, names, storage.WithVouch(served.vouch))
		served.askRest(ctx, probes)
	}()
	catalogs := readCatalogs(ctx, store, ids)
	<-probed

	out := make([]SessionInfo, 0, len(ids))
	for i, id := range ids {
		info := SessionInfo{ID: id}
		var st storage.LeaseStatus
		if probes != nil {
			st = probes[i]
		}
		c, err := catalogs[i].c, catalogs[i].err
		switch {
		case IsNotFound(err):
			continue // deleted between Keys and Get
		case err != nil:
			info.State, info.Reason = StateBroken, "catalog entry unreadable: "+err.Error()
			info.Epoch = st.Epoch
			out = append(out, info)
			continue
		}
		info = infoOf(c)
		info.Epoch = max(c.Epoch, st.Epoch)
		switch {
		case st.Held:
			h := st.Holder
			info.Holder = &h
			info.Checkpointing = c.Checkpointing
			l := served.liveness(names[i])
			if h.PID == pid && h.Host == host {
				l = LivenessServing // this process holds it
			}
			info.setHeld(l)
		case c.State == CatalogBroken:
			info.State, info.Reason = StateBroken, c.Reason
		case c.State == CatalogCreating:
			// The creation stopped before its live entry was written: the
			// journal's first records tell whether it got far enough for a
			// restore to complete it. Rare, and a few records' read.
			info.State, info.Reason = StateBroken, "its creation did not finish"
			if ok, err := creationRecorded(ctx, store, names[i]); err != nil {
				info.Reason += " (journal unreadable: " + err.Error() + ")"
			} else if ok {
				info.State, info.Reason = StateCrashed, "its creation was interrupted after it was recorded"
			}
		case c.State == CatalogStopped:
			info.State, info.Reason = StateIdle, c.Reason
		default:
			info.State, info.Reason = StateCrashed, c.Reason
		}
		if probeErrs[i] != nil && info.State != StateBroken {
			info.Reason = LeaseUnknownReason + probeErrs[i].Error()
		}
		out = append(out, info)
	}
	// Newest first; ids are unique, so the order is total and an unstable
	// sort (far fewer moves of these large rows) gives the same result.
	slices.SortFunc(out, func(a, b SessionInfo) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// setHeld sets the state of a held session's row from what liveness said
// of its holder (LivenessServing for this process): live when it serves
// the session, held and not answering when it is stopped, held otherwise.
func (i *SessionInfo) setHeld(l Liveness) {
	i.State, i.Reason, i.NotAnswering = StateHeld, "", false
	switch l {
	case LivenessServing:
		i.State = StateLive
	case LivenessStopped:
		i.Reason, i.NotAnswering = NotAnsweringReason(i.Holder.PID), true
	}
}

// infoOf is the row of a listing a session's catalog entry c gives: the
// one projection of a CatalogEntry into a SessionInfo (the entry itself
// is the projection of the session's fold, catalogOf). What the entry
// cannot say alone (the state, the holder, whether its checkpoint in
// progress means anything) ListSessions adds from the lease probe.
func infoOf(c CatalogEntry) SessionInfo {
	info := SessionInfo{
		ID: c.ID, Title: c.Title, Profile: c.Profile, Engine: c.Engine, Shell: c.Shell, Epoch: c.Epoch,
		OpenTurn: c.OpenTurn, Turn: c.TurnIndex, OpenGate: c.OpenGate, TurnSince: c.TurnSince, GateSince: c.GateSince,
		GatePrompt: c.GatePrompt, LastEnd: c.LastEnd, Attention: c.Attention, Checkpoint: c.Checkpoint,
		Conversation: c.Conversation, Placement: c.Placement, Root: c.Root, Worktree: c.Worktree, ForkedFrom: c.ForkedFrom, LastSeq: c.LastSeq, Turns: c.Turns, Created: c.Created, Updated: c.Updated,
	}
	if info.Shell == "" {
		info.Shell = LegacyShell
	}
	return info
}

// creationRecorded reports whether the journal name begins with a
// session's SessionStarted and root LoopStarted (only fences before or
// between them), which is what RestoreSession needs to complete a creation
// that stopped. It reads the first few records only.
func creationRecorded(ctx context.Context, store storage.Ledger, name string) (bool, error) {
	rp, err := journal.NewReplayer(ctx, store, name, 0)
	if IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer rp.Close()
	started := false
	for n := 0; n < 8 && rp.Next(); n++ {
		rec := rp.Record()
		if rec.Kind == journal.KindFence {
			continue
		}
		switch rec.Event.(type) {
		case event.SessionStarted:
			if started {
				return false, nil
			}
			started = true
			continue
		case event.LoopStarted:
			return started, nil
		}
		return false, nil
	}
	return false, rp.Err()
}

// sessionIDs lists the ids that may have a catalog entry: one level of
// keys under "sessions/" (an id without an entry is then skipped when its
// entry is read).
func sessionIDs(ctx context.Context, store storage.Store) ([]string, error) {
	segs, err := store.Children(ctx, sessionsPrefix)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(segs))
	for _, seg := range segs {
		if isSessionID(seg) {
			ids = append(ids, seg)
		}
	}
	return ids, nil
}

// startListing is what every listing begins with: the store's session ids,
// their lease names, and the vouch its probes ask (opts' liveness, for
// this process on this machine).
func startListing(ctx context.Context, store storage.Store, opts []ListOption) (ids, names []string, served *servedSet, err error) {
	cfg := listConfigOf(opts)
	if ids, err = sessionIDs(ctx, store); err != nil {
		return nil, nil, nil, err
	}
	names = make([]string, len(ids))
	for i, id := range ids {
		names[i] = storage.SessionName(id)
	}
	host, _ := os.Hostname()
	return ids, names, newServedSet(cfg.liveness, host, os.Getpid()), nil
}

// isSessionID reports whether s is a session id as the store spells it.
func isSessionID(s string) bool {
	id, err := uuid.Parse(s)
	return err == nil && id.String() == s
}

type catalogRead struct {
	c   CatalogEntry
	err error
}

// readCatalogs reads the catalog entries of ids, in parallel for more
// than a few: a read is a few system calls on a directory store but a
// round trip to the server on NATS, where 100 entries read one after the
// other were 37 ms of `ls` and are 22 ms on 8 goroutines (a directory
// store's `ls` is the same either way).
func readCatalogs(ctx context.Context, kv storage.KV, ids []string) []catalogRead {
	out := make([]catalogRead, len(ids))
	workers := min(8, len(ids)/8)
	if workers <= 1 {
		for i, id := range ids {
			out[i].c, out[i].err = ReadCatalog(ctx, kv, id)
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ids) {
					return
				}
				out[i].c, out[i].err = ReadCatalog(ctx, kv, ids[i])
			}
		})
	}
	wg.Wait()
	return out
}

// probeAll probes names with the store's ProbeMany, or one by one when
// that fails, and returns each name's status and error: one bad epoch file
// makes its own session's lease state unknown, never its neighbours'.
func probeAll(ctx context.Context, store storage.Store, names []string, opts ...storage.ProbeOption) ([]storage.LeaseStatus, []error) {
	errs := make([]error, len(names))
	if st, err := store.ProbeMany(ctx, names, opts...); err == nil {
		return st, errs
	}
	// One bad epoch file must not hide the others: fall back to one by one.
	out := make([]storage.LeaseStatus, len(names))
	for i, n := range names {
		out[i], errs[i] = store.Probe(ctx, n)
	}
	return out, errs
}

// FindSession resolves a full id or a unique prefix of one (at least four
// characters) among the store's sessions.
func FindSession(ctx context.Context, store storage.Store, idOrPrefix string) (uuid.UUID, error) {
	if id, err := uuid.Parse(idOrPrefix); err == nil {
		return id, nil
	}
	p := strings.ToLower(idOrPrefix)
	if len(p) < 4 || strings.Trim(p, "0123456789abcdef-") != "" {
		return uuid.Nil, &BadIDError{Input: idOrPrefix}
	}
	keys, err := store.Keys(ctx, sessionsPrefix+p)
	if err != nil {
		return uuid.Nil, err
	}
	var matches []string
	for _, k := range keys {
		if rest, ok := strings.CutSuffix(strings.TrimPrefix(k, sessionsPrefix), "/catalog"); ok && !strings.Contains(rest, "/") {
			matches = append(matches, rest)
		}
	}
	switch len(matches) {
	case 0:
		return uuid.Nil, &UnknownSessionError{Input: idOrPrefix}
	case 1:
		return uuid.Parse(matches[0])
	}
	return uuid.Nil, &AmbiguousIDError{Input: idOrPrefix, Matches: matches}
}

// BadIDError refuses input that is neither a session id nor a prefix.
type BadIDError struct{ Input string }

func (e *BadIDError) Error() string {
	return "not a session id: " + strconvQuote(e.Input) + " (want a UUID or a unique prefix of at least 4 hex characters)"
}

// UnknownSessionError: no session id starts with Input.
type UnknownSessionError struct{ Input string }

func (e *UnknownSessionError) Error() string {
	return "no session in this store has an id starting with " + strconvQuote(e.Input)
}

// AmbiguousIDError: several session ids start with Input.
type AmbiguousIDError struct {
	Input   string
	Matches []string
}

func (e *AmbiguousIDError) Error() string {
	return "session id prefix " + strconvQuote(e.Input) + " matches " + strings.Join(e.Matches, ", ")
}
