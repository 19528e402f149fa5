package rig

import (
	"strings"
	"time"

	"looprig/rig/event"
)

// TurnOutcome is how a turn ended: the kind of its ending event.
type TurnOutcome string

const (
	TurnOutcomeDone        TurnOutcome = "done"        // TurnDone: the command ran to its exit
	TurnOutcomeFailed      TurnOutcome = "failed"      // TurnFailed: the engine could not run it
	TurnOutcomeInterrupted TurnOutcome = "interrupted" // TurnInterrupted: a user, a shutdown or a crash stopped it
)

// TurnEnd is how a session's last turn ended, as its catalog entry keeps
// it, so a listing can say "turn 3 failed: exit 2" without reading the
// journal. The journal's ending event is the truth; this is its summary.
type TurnEnd struct {
	TurnID  string      `json:"turn_id"`
	Index   int         `json:"index"`
	Outcome TurnOutcome `json:"outcome"`
	// ExitCode is the command's exit code (done only).
	ExitCode int `json:"exit_code"`
	// Reason is the interruption's reason, or the failure's first line.
	Reason  string    `json:"reason,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
}

// Failed says whether the turn did not end well: it failed, was
// interrupted, or exited non-zero.
func (e TurnEnd) Failed() bool { return e.Outcome != TurnOutcomeDone || e.ExitCode != 0 }

// Duration is how long the turn ran.
func (e TurnEnd) Duration() time.Duration { return e.Ended.Sub(e.Started) }

// TurnEndOf summarizes a turn-ending event (TurnDone, TurnFailed,
// TurnInterrupted) recorded at ended, of the turn that started at started
// with index (a TurnDone's duration and a TurnInterrupted's index win over
// them); ok is false for any other event. State summarizes ends with it.
func TurnEndOf(ev event.Event, index int, started, ended time.Time) (TurnEnd, bool) {
	e := TurnEnd{Index: index, Started: started, Ended: ended}
	switch ev := ev.(type) {
	case event.TurnDone:
		e.TurnID, e.Outcome, e.ExitCode = ev.TurnID, TurnOutcomeDone, ev.ExitCode
		if ev.Duration > 0 {
			e.Started = ended.Add(-ev.Duration)
		}
	case event.TurnFailed:
		e.TurnID, e.Outcome, e.Reason = ev.TurnID, TurnOutcomeFailed, firstLineOf(ev.Err)
	case event.TurnInterrupted:
		e.TurnID, e.Outcome, e.Reason, e.Index = ev.TurnID, TurnOutcomeInterrupted, ev.Reason, ev.Index
	default:
		return TurnEnd{}, false
	}
	return e, true
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
