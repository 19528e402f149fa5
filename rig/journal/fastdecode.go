package journal

import "looprig/rig/event"

// decodeFast decodes the data of the events a long journal is made of
// (TurnOutput, the output checkpoints) with the record lexer instead of
// encoding/json, which dominates a restore's replay. It answers only for
// data in the form the codec writes — each known key at most once, strings,
// an unsigned integer — and reports false for anything else, which the
// caller then decodes with event.Raw.Decode, so every error and every
// leniency stays exactly encoding/json's. Strings are unescaped as
// encoding/json unescapes them (see unquote).
func decodeFast(raw *event.Raw) (event.Event, bool) {
	if raw.V != event.Version || raw.Type != event.TypeTurnOutput {
		return nil, false
	}
	var ev event.TurnOutput
	var seen uint8
	l := lexer{b: raw.Data}
	err := l.object(func(key []byte) error {
		var err error
		bit := uint8(0)
		switch string(key) {
		case "turn_id":
			bit = 1
			ev.TurnID, err = l.string()
		case "text":
			bit = 2
			ev.Text, err = l.string()
		case "elided":
			bit = 4
			var n uint64
			if n, err = l.uint(); err == nil && n > 1<<62 {
				err = errDuplicate // out of the plain range: let encoding/json judge
			}
			ev.Elided = int64(n)
		case "offset":
			bit = 8
			var n uint64
			if n, err = l.uint(); err == nil && n > 1<<62 {
				err = errDuplicate
			}
			ev.Offset = int64(n)
		default:
			return errDuplicate // unknown here: encoding/json judges
		}
		if seen&bit != 0 {
			return errDuplicate
		}
		seen |= bit
		return err
	})
	if err != nil {
		return nil, false
	}
	l.ws()
	if l.i != len(l.b) {
		return nil, false
	}
	return ev, true
}
