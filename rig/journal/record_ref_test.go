package journal

import (
	"bytes"
	"encoding/json"
	"errors"
)

// decodeRecordStd is the reference decoder: the envelope read by
// encoding/json (strict: unknown fields refused), then the same checks as
// DecodeRecord. The hand-written parser must never accept what this
// rejects, and must agree with it on everything it accepts.
func decodeRecordStd(seq uint64, payload []byte) (Record, error) {
	var w recordWire
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Record{}, err
	}
	if len(bytes.TrimLeft(payload[dec.InputOffset():], " \t\r\n")) != 0 {
		return Record{}, errors.New("trailing data")
	}
	return finishRecord(seq, w)
}

// contentOf re-encodes the content of a decoded record, as the writer
// encodes it (see encodeContent).
func contentOf(rec Record) ([]byte, error) {
	return encodeContent(rec.Kind, rec.Epoch, rec.LoopID, rec.Event, rec.Command)
}
