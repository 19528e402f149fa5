package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// turnDoneWire is the wire form of TurnDone: its Duration travels as whole
// milliseconds in "duration_ms".
type turnDoneWire struct {
	TurnID     string `json:"turn_id"`
	ExitCode   int    `json:"exit_code"`
	DurationMS int64  `json:"duration_ms"`
}

// MarshalJSON encodes Duration as whole milliseconds in "duration_ms".
func (t TurnDone) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(turnDoneWire{TurnID: t.TurnID, ExitCode: t.ExitCode, DurationMS: t.Duration.Milliseconds()}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON decodes the form written by MarshalJSON, strictly.
func (t *TurnDone) UnmarshalJSON(b []byte) error {
	var w turnDoneWire
	if err := strictDecode(b, &w); err != nil {
		return err
	}
	const maxMS = math.MaxInt64 / int64(time.Millisecond)
	if w.DurationMS > maxMS || w.DurationMS < -maxMS {
		return &invalidValue{field: "duration_ms", value: fmt.Sprint(w.DurationMS), want: "a representable duration"}
	}
	*t = TurnDone{TurnID: w.TurnID, ExitCode: w.ExitCode, Duration: time.Duration(w.DurationMS) * time.Millisecond}
	return nil
}
