package host

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"looprig/rig/event"
)

// TestFootprintCountsWhatEventsHold: the footprint a forwarder charges to
// the output budget for an envelope it holds is at least the bytes its
// strings, slices and maps hold (what its line then carries, less the
// line's own framing), and not much more, whatever the event type.
func TestFootprintCountsWhatEventsHold(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	paths := make([]string, 1000)
	manifest := map[string]string{}
	for i := range paths {
		paths[i] = fmt.Sprintf("dir/%095d", i)
		manifest[fmt.Sprintf("key%d", i)] = strings.Repeat("v", 100)
	}
	changes := make([]event.Change, 500)
	for i := range changes {
		changes[i] = event.Change{Field: "f", Persisted: strings.Repeat("p", 100), Live: strings.Repeat("l", 100), Level: "info"}
	}
	for _, ev := range []event.Event{
		event.TurnOutput{TurnID: "t", Text: big},
		event.OutputDelta{TurnID: "t", Stream: event.StreamStdout, Text: big},
		event.TurnStarted{TurnID: "t", Input: big},
		event.GateOpened{GateID: "g", TurnID: "t", Prompt: big},
		event.TurnFailed{TurnID: "t", Err: big},
		event.WorkspaceReconciled{Action: "updated", Manifest: strings.Repeat("a", 64), Paths: paths},
		event.RestoreDone{Interrupted: paths, GatesClosed: paths},
		event.SessionStarted{Title: "t", Manifest: manifest},
		event.ConfigurationAdopted{Changes: changes, Manifest: manifest},
	} {
		env := event.Envelope{Seq: 7, Session: "s", LoopID: "L", At: time.Now(), Event: ev}
		line, err := eventLine(1, env)
		if err != nil {
			t.Fatal(err)
		}
		fp := footprint(env)
		// The line's framing and field names are not in the footprint;
		// its values are.
		if want := len(line) * 9 / 10; fp < want {
			t.Errorf("%s: footprint %d, its line %d bytes", ev.Type(), fp, len(line))
		}
		if fp > 3*len(line) {
			t.Errorf("%s: footprint %d, over three times its line's %d bytes", ev.Type(), fp, len(line))
		}
	}
	if fp := footprint(event.Envelope{Seq: 1, Event: event.SessionIdle{}}); fp <= 0 || fp > 256 {
		t.Errorf("SessionIdle: footprint %d", fp)
	}
}
