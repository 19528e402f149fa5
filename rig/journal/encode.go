package journal

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"looprig/rig/event"
)

// A record is encoded by hand, in a fixed field order, with the commit time
// last:
//
//	{"v":1,"kind":"event","loop_id":"…","event":{…},"at":"…"}
//
// Everything before `,"at":` is the record's content. The writer encodes the
// content in the caller's goroutine and the batch leader appends the commit
// time, so times never go backwards along the sequence (given a
// non-decreasing clock).

// atSuffixMax bounds the bytes appendAt adds.
const atSuffixMax = len(`,"at":"`) + len(time.RFC3339Nano) + len(`"}`) + 8

// encodeContent returns the content of a record, with spare capacity for
// the timestamp. ev must already be checked durable; cmd may be nil.
func encodeContent(kind Kind, epoch uint64, loopID string, ev event.Event, cmd *Command) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(256 + atSuffixMax) // most records; a long output line grows it once more
	buf.WriteString(`{"v":1,"kind":"`)
	buf.WriteString(string(kind))
	buf.WriteByte('"')
	if epoch != 0 {
		buf.WriteString(`,"epoch":`)
		buf.WriteString(strconv.FormatUint(epoch, 10))
	}
	if loopID != "" {
		buf.WriteString(`,"loop_id":`)
		writeJSON(&buf, loopID)
	}
	if ev != nil {
		buf.WriteString(`,"event":`)
		if err := event.AppendTo(&buf, ev); err != nil {
			return nil, err
		}
	}
	if cmd != nil {
		buf.WriteString(`,"command":`)
		if err := writeJSON(&buf, cmd); err != nil {
			return nil, err
		}
	}
	buf.Grow(atSuffixMax)
	return buf.Bytes(), nil
}

// appendAt completes a record's content with its commit time.
func appendAt(content []byte, at time.Time) []byte {
	b := append(content, `,"at":"`...)
	b = at.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...)
}

// writeJSON encodes v canonically, like the event codec: without HTML
// escaping, with invalid UTF-8 as a literal U+FFFD (what it decodes to), and
// without a trailing newline.
func writeJSON(buf *bytes.Buffer, v any) error {
	start := buf.Len()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1)
	buf.Truncate(start + len(event.LiteralReplacement(buf.Bytes()[start:])))
	return nil
}
