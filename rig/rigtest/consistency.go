package rigtest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// The suite's consistency check, in the spirit of bbolt's, which checks
// its database after every test: when a test case ends, every session
// journal in its store must be one looprig could have written. Run
// registers it in each case's cleanup (see newEnv); a case that writes a
// journal looprig never would (a corrupt frame, overlapping owners, a
// hand-made record) opts out with env.skipConsistency and a reason.
//
// CheckRecords states the invariants, each once; CheckJournals applies
// them to every journal of a store.

// CheckJournals checks every session journal of store with CheckRecords
// and fails t for each violation. It finds the journals from the store's
// catalog keys (the "sessions/" children) and from extra, ledger names
// the caller saw written (a journal whose catalog entry is gone).
func CheckJournals(t testing.TB, store storage.Store, extra ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	names, err := journalNames(ctx, store, extra)
	if err != nil {
		t.Errorf("consistency check: %v", err)
		return
	}
	for _, name := range names {
		recs, err := replayAll(ctx, store, name)
		if err != nil {
			t.Errorf("consistency check: journal %s: %v", name, err)
			continue
		}
		if err := CheckRecords(recs); err != nil {
			t.Errorf("consistency check: journal %s: %v\nrecords:%s", name, err, describe(recs))
		}
	}
}

// journalNames lists the ledgers of sessions: "sessions/<id>" for every
// child of "sessions/" in the KV, and extra, sorted, without duplicates.
func journalNames(ctx context.Context, store storage.Store, extra []string) ([]string, error) {
	segs, err := store.Children(ctx, "sessions/")
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	seen := map[string]bool{}
	for _, s := range segs {
		seen[storage.SessionName(s)] = true
	}
	for _, n := range extra {
		seen[n] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		if storage.ValidateName(n) == nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

func replayAll(ctx context.Context, ledger storage.Ledger, name string) ([]journal.Record, error) {
	rp, err := journal.NewReplayer(ctx, ledger, name, 0)
	if err != nil {
		return nil, err
	}
	defer rp.Close()
	var out []journal.Record
	for rp.Next() {
		out = append(out, rp.Record())
	}
	return out, rp.Err()
}

// CheckRecords checks that recs, a whole journal in order, keeps the
// invariants of every journal looprig writes, and returns the violations
// found, joined (nil when there are none). An empty journal keeps them.
//
// A tenure is what one owner wrote: a fence and the records up to the
// next fence. A tenure is live once the session runs in it: after the
// root LoopStarted in the creating tenure, after RestoreDone in a
// restore's. The invariants:
//
//   - seq: sequences are contiguous from 1;
//   - first-fence: the first record is a fence;
//   - fence: fence epochs increase; an equal epoch is a failed restore
//     re-opening its journal to record why, so RestoreErrored, another
//     fence or the end of the journal follows it;
//   - start: SessionStarted and LoopStarted come once each, in that order,
//     right after the first fence; loop-scope events come after
//     LoopStarted and carry its loop id;
//   - live: a turn starts, and a gate opens, only in a live tenure, and
//     not after HandedOff or SessionStopped in it;
//   - turn: a turn starts once, while no other turn is open; it ends at
//     most once (TurnDone, TurnFailed or TurnInterrupted), and in a later
//     tenure than its own only by TurnInterrupted (a restore or a break
//     closing it);
//   - gate: a gate opens once, in the open turn; GateResolved only for an
//     open gate; a turn ends with none of its gates open;
//   - output: a turn's TurnOutput checkpoints come while it is open, each
//     at the offset where the text of the previous ones ended;
//   - restore: RestoreStarted at the tenure's fence epoch, once, before
//     the tenure is live; RestoreDone at that epoch after it, with no turn
//     or gate left open; RestoreErrored only in a tenure not live;
//   - stopped: nothing follows SessionStopped but a fence, and a session
//     stops with no turn or gate open;
//   - input: an input_written names an earlier input command of its turn,
//     and no input has two;
//   - seen: AttentionSeen covers only records before it.
func CheckRecords(recs []journal.Record) error {
	c := newChecker()
	for i := range recs {
		c.record(i, recs)
	}
	return c.err()
}

type gateState struct {
	turn     string
	resolved bool
}

type turnState struct {
	tenure int
	ended  bool
	output int64 // bytes of text checkpointed so far
}

type checker struct {
	problems []string
	tenure   int    // number of fences so far
	epoch    uint64 // of the last fence
	live     bool   // the current tenure runs the session
	stopped  bool   // SessionStopped in the current tenure
	handed   bool   // HandedOff in the current tenure
	restore  bool   // RestoreStarted in the current tenure
	started  bool   // SessionStarted seen
	loopID   string // of LoopStarted; "" before it
	open     string // the open turn, "" when none
	turns    map[string]*turnState
	gates    map[string]*gateState
	inputs   map[uint64]string // seq of an input command -> its turn
	written  map[uint64]bool   // inputs an input_written names
}

func newChecker() *checker {
	return &checker{turns: map[string]*turnState{}, gates: map[string]*gateState{}, inputs: map[uint64]string{}, written: map[uint64]bool{}}
}

func (c *checker) fail(r journal.Record, rule, format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf("%s: record %d: %s", rule, r.Seq, fmt.Sprintf(format, args...)))
}

func (c *checker) err() error {
	if len(c.problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(c.problems, "\n"))
}

// record checks recs[i] against what came before it.
func (c *checker) record(i int, recs []journal.Record) {
	r := recs[i]
	if r.Seq != uint64(i+1) {
		c.fail(r, "seq", "sequence %d at position %d: not contiguous from 1", r.Seq, i+1)
	}
	if i == 0 && r.Kind != journal.KindFence {
		c.fail(r, "first-fence", "the journal starts with a %s, not a fence", r.Kind)
	}
	if c.stopped && r.Kind != journal.KindFence {
		c.fail(r, "stopped", "%s after SessionStopped, before any fence", kindName(r))
	}
	switch r.Kind {
	case journal.KindFence:
		c.fence(i, recs)
	case journal.KindCommand:
		c.command(r)
	case journal.KindEvent:
		if _, first := r.Event.(event.LoopStarted); r.Event.Scope() == event.LoopScope && !first {
			if c.loopID == "" {
				c.fail(r, "start", "%s before LoopStarted", r.Event.Type())
			} else if r.LoopID != c.loopID {
				c.fail(r, "start", "%s of loop %q, the session's is %q", r.Event.Type(), r.LoopID, c.loopID)
			}
		}
		c.event(r)
	}
}

func kindName(r journal.Record) string {
	switch r.Kind {
	case journal.KindEvent:
		return string(r.Event.Type())
	case journal.KindCommand:
		return "command " + r.Command.Name
	}
	return string(r.Kind)
}

func (c *checker) fence(i int, recs []journal.Record) {
	r := recs[i]
	switch {
	case c.tenure == 0 || r.Epoch > c.epoch:
	case r.Epoch == c.epoch && (i+1 == len(recs) || recs[i+1].Kind == journal.KindFence ||
		recs[i+1].Kind == journal.KindEvent && recs[i+1].Event.Type() == (event.RestoreErrored{}).Type()):
		// A failed restore re-opening its journal at its own epoch to
		// record RestoreErrored (rig/restore.go, recordRestoreErrored).
	default:
		c.fail(r, "fence", "epoch %d after epoch %d", r.Epoch, c.epoch)
	}
	c.tenure++
	c.epoch = r.Epoch
	c.live, c.stopped, c.handed, c.restore = false, false, false, false
}

func (c *checker) command(r journal.Record) {
	cmd := r.Command
	switch cmd.Name {
	case journal.CommandInput:
		if _, ok := c.turns[cmd.TurnID]; !ok {
			c.fail(r, "input", "input for turn %q, which never started", cmd.TurnID)
		}
		c.inputs[r.Seq] = cmd.TurnID
	case journal.CommandInputWritten:
		turn, ok := c.inputs[cmd.InputSeq]
		switch {
		case !ok:
			c.fail(r, "input", "input_written names record %d, no earlier input command", cmd.InputSeq)
		case turn != cmd.TurnID:
			c.fail(r, "input", "input_written of turn %q names an input of turn %q", cmd.TurnID, turn)
		case c.written[cmd.InputSeq]:
			c.fail(r, "input", "a second input_written for the input at %d", cmd.InputSeq)
		}
		c.written[cmd.InputSeq] = true
	}
}

func (c *checker) event(r journal.Record) {
	switch ev := r.Event.(type) {
	case event.SessionStarted:
		if c.started || r.Seq != 2 {
			c.fail(r, "start", "SessionStarted is not the record after the first fence, once")
		}
		c.started = true
	case event.LoopStarted:
		if c.loopID != "" || !c.started || r.Seq != 3 || ev.LoopID == "" || r.LoopID != ev.LoopID {
			c.fail(r, "start", "LoopStarted %q is not the one root loop, right after SessionStarted", ev.LoopID)
		}
		if c.loopID == "" {
			c.loopID = ev.LoopID
		}
		if c.tenure == 1 {
			c.live = true
		}
	case event.HandedOff:
		c.handed = true
	case event.SessionStopped:
		c.noneOpen(r, "stopped", "SessionStopped")
		c.stopped = true
	case event.RestoreStarted:
		if ev.Epoch != c.epoch || c.restore || c.live {
			c.fail(r, "restore", "RestoreStarted at epoch %d (fence epoch %d; once, before the tenure is live)", ev.Epoch, c.epoch)
		}
		c.restore = true
	case event.RestoreDone:
		if ev.Epoch != c.epoch || !c.restore || c.live {
			c.fail(r, "restore", "RestoreDone at epoch %d without a RestoreStarted of its tenure at that epoch (fence epoch %d)", ev.Epoch, c.epoch)
		}
		c.noneOpen(r, "restore", "RestoreDone")
		c.live = true
	case event.RestoreErrored:
		if c.live {
			c.fail(r, "restore", "RestoreErrored in a live tenure")
		}
	case event.TurnStarted:
		c.turnStarted(r, ev)
	case event.TurnDone:
		c.turnEnded(r, ev.TurnID, false)
	case event.TurnFailed:
		c.turnEnded(r, ev.TurnID, false)
	case event.TurnInterrupted:
		c.turnEnded(r, ev.TurnID, true)
	case event.TurnOutput:
		t := c.turns[ev.TurnID]
		switch {
		case t == nil || t.ended:
			c.fail(r, "output", "TurnOutput of turn %q, which is not open", ev.TurnID)
		case ev.Offset != t.output:
			c.fail(r, "output", "TurnOutput of turn %q at offset %d, its text so far ends at %d", ev.TurnID, ev.Offset, t.output)
		}
		if t != nil {
			t.output += int64(len(ev.Text))
		}
	case event.GateOpened:
		switch {
		case c.gates[ev.GateID] != nil:
			c.fail(r, "gate", "gate %q opened twice", ev.GateID)
		case ev.TurnID != c.open || c.open == "":
			c.fail(r, "gate", "gate %q opened in turn %q; the open turn is %q", ev.GateID, ev.TurnID, c.open)
		}
		c.mustBeLive(r, "GateOpened")
		c.gates[ev.GateID] = &gateState{turn: ev.TurnID}
	case event.GateResolved:
		g := c.gates[ev.GateID]
		switch {
		case g == nil:
			c.fail(r, "gate", "GateResolved of gate %q, which never opened", ev.GateID)
		case g.resolved:
			c.fail(r, "gate", "gate %q resolved twice", ev.GateID)
		default:
			g.resolved = true
		}
	case event.AttentionSeen:
		if ev.Through >= r.Seq {
			c.fail(r, "seen", "AttentionSeen through %d, not before it", ev.Through)
		}
	}
}

func (c *checker) mustBeLive(r journal.Record, what string) {
	switch {
	case !c.live:
		c.fail(r, "live", "%s in a tenure that is not live (epoch %d)", what, c.epoch)
	case c.handed:
		c.fail(r, "live", "%s after HandedOff", what)
	}
}

func (c *checker) turnStarted(r journal.Record, ev event.TurnStarted) {
	switch {
	case c.turns[ev.TurnID] != nil:
		c.fail(r, "turn", "turn %q started twice", ev.TurnID)
	case c.open != "":
		c.fail(r, "turn", "turn %q started while turn %q is open", ev.TurnID, c.open)
	}
	c.mustBeLive(r, "TurnStarted")
	c.turns[ev.TurnID] = &turnState{tenure: c.tenure}
	c.open = ev.TurnID
}

func (c *checker) turnEnded(r journal.Record, id string, interrupted bool) {
	t := c.turns[id]
	switch {
	case t == nil:
		c.fail(r, "turn", "%s of turn %q, which never started", r.Event.Type(), id)
		return
	case t.ended:
		c.fail(r, "turn", "turn %q ended twice (%s)", id, r.Event.Type())
		return
	case t.tenure != c.tenure && !interrupted:
		c.fail(r, "turn", "%s of turn %q, started in an earlier tenure", r.Event.Type(), id)
	}
	for gid, g := range c.gates {
		if g.turn == id && !g.resolved {
			c.fail(r, "gate", "turn %q ends with gate %q open", id, gid)
		}
	}
	t.ended = true
	if c.open == id {
		c.open = ""
	}
}

// noneOpen fails r, what, when a turn or a gate is open.
func (c *checker) noneOpen(r journal.Record, rule, what string) {
	if c.open != "" {
		c.fail(r, rule, "%s with turn %q open", what, c.open)
	}
	for gid, g := range c.gates {
		if !g.resolved {
			c.fail(r, rule, "%s with gate %q open", what, gid)
		}
	}
}
