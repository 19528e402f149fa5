package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// attach replays the last attachTail records of a long journal. What the
// records before them hold is said, not shown: how many there are, the
// turns they start, and, when the replay begins inside a turn, that
// turn's header (its index and input, as its TurnStarted record has
// them), so that the output which follows is not anonymous.

// skipChunk is how many records attach's skippedBefore reads at a time,
// going back from the replay's start.
const skipChunk = 256

// skipped is what records 1..records, which an attach does not replay,
// hold.
type skipped struct {
	records uint64
	// last is the index of the last turn started in them, -1 for none.
	last int
	// open is that turn when it was still running after them: the replay
	// begins inside it.
	open *rig.OpenTurn
	// onScreen: open's output had a full-screen program's alternate screen
	// after them (the replay begins inside its screen).
	onScreen bool
}

// skippedBefore reads what records 1..after of session id's journal
// hold (on an error, only their number): it goes back from after, chunk
// records at a time, to the last turn they start, and folds the events
// from that turn's start on (a rig.State) to tell whether it ended before
// after. It reads the records of about one turn, never the whole journal.
func skippedBefore(ctx context.Context, st storage.Store, id uuid.UUID, after, chunk uint64) (skipped, error) {
	s := skipped{records: after, last: -1}
	var newer [][]event.Envelope // chunks read, the newest first; output left out
	var screens []map[string]bool
	for hi := after; hi > 0; {
		lo := hi - min(hi, chunk)
		evs, start, alt, err := readChunk(ctx, st, id, lo, hi)
		if err != nil {
			return skipped{records: after, last: -1}, err
		}
		screens = append(screens, alt)
		if start < 0 {
			newer = append(newer, evs)
			hi = lo
			continue
		}
		var fold rig.State
		for _, env := range evs[start:] {
			fold.Apply(env)
		}
		for i := len(newer) - 1; i >= 0; i-- {
			for _, env := range newer[i] {
				fold.Apply(env)
			}
		}
		s.last = evs[start].Event.(event.TurnStarted).Index
		if t := fold.Turn(); t != nil {
			open := *t
			s.open = &open
			for _, alt := range screens { // the newest switch of its output
				if on, ok := alt[t.ID]; ok {
					s.onScreen = on
					break
				}
			}
		}
		return s, nil
	}
	return s, nil
}

// readChunk returns the events of records lo+1..hi but the turns' output,
// the position among them of the last TurnStarted, -1 for none, and, by
// turn, whether the last switch of alternate screen in its output there
// entered it (true) or left it (false); a turn whose output has none is
// not in alt.
func readChunk(ctx context.Context, st storage.Store, id uuid.UUID, lo, hi uint64) (evs []event.Envelope, start int, alt map[string]bool, err error) {
	rp, err := rig.ReadEvents(ctx, st, id, lo)
	if err != nil {
		return nil, -1, nil, fmt.Errorf("read the journal before the records shown: %w", err)
	}
	defer rp.Close()
	start = -1
	alt = map[string]bool{}
	for rp.Next() {
		env := rp.Envelope()
		if env.Seq > hi {
			break
		}
		switch ev := env.Event.(type) {
		case event.TurnOutput:
			if on, ok := lastScreenSwitch(ev.Text); ok {
				alt[ev.TurnID] = on
			}
			continue
		case event.OutputDelta:
			continue
		case event.TurnStarted:
			start = len(evs)
		}
		evs = append(evs, env)
	}
	if err := rp.Err(); err != nil {
		return nil, -1, nil, fmt.Errorf("read the journal before the records shown: %w", err)
	}
	return evs, start, alt, nil
}

// lastScreenSwitch says whether the last switch of alternate screen in
// output text enters it (on) or leaves it; ok false when it has none.
func lastScreenSwitch(text string) (on, ok bool) {
	enter := max(strings.LastIndex(text, "\x1b[?1049h"), strings.LastIndex(text, "\x1b[?1047h"), strings.LastIndex(text, "\x1b[?47h"))
	leave := max(strings.LastIndex(text, "\x1b[?1049l"), strings.LastIndex(text, "\x1b[?1047l"), strings.LastIndex(text, "\x1b[?47l"))
	return enter > leave, enter != leave
}

// note says what an attach does not show, and where to read it.
func (s skipped) note(logCmd string) string {
	var turns string
	switch {
	case s.open != nil && s.open.Index == 0:
		turns = " (the start of turn 0)"
	case s.open != nil && s.open.Index == 1:
		turns = " (turn 0 and the start of turn 1)"
	case s.open != nil:
		turns = fmt.Sprintf(" (turns 0–%d and the start of turn %d)", s.open.Index-1, s.open.Index)
	case s.last == 0:
		turns = " (turn 0)"
	case s.last > 0:
		turns = fmt.Sprintf(" (turns 0–%d)", s.last)
	}
	return fmt.Sprintf("records 1–%d are not shown here%s: %s shows them", s.records, turns, logCmd)
}
