package logfile

import (
	"bytes"
	"fmt"

	"looprig/fsstore/internal/frame"
	"looprig/fsstore/internal/fsutil"
	"looprig/rig/storage"
)

// repairTail deals with the frame at pos, which does not decode (derr),
// in a file whose validated part ends at pos. If a valid frame starts
// anywhere after it (before size), the damage cannot be a torn tail: it
// returns *storage.CorruptError and changes nothing. Otherwise it cuts the
// file at pos and fsyncs the truncation (a file open for reading only is
// left as it is: its valid part ends at pos all the same).
func (l *Log) repairTail(rd *reader, pos, size int64, derr error) error {
	q, found, err := findFrame(rd, pos+1, size)
	if err != nil {
		return err
	}
	if found {
		return &storage.CorruptError{Name: l.name, Path: l.path, Offset: pos,
			Reason: fmt.Sprintf("bad frame (%v) followed by a valid frame at byte %d", derr, q), Err: derr}
	}
	if l.readOnly {
		// A reader that cannot write leaves the cut to a writer: what
		// follows pos was never acknowledged, and is not read.
		return nil
	}
	if err := l.f.Truncate(pos); err != nil {
		return err
	}
	return fsutil.SyncFile(l.f)
}

var magic = []byte(frame.Magic)

// findFrame looks for a complete frame with a valid checksum starting
// anywhere in [from, limit).
func findFrame(rd *reader, from, limit int64) (int64, bool, error) {
	pos := from
	for limit-pos >= frame.Overhead {
		w, err := rd.at(pos, int(min(limit-pos, readChunk)))
		if err != nil {
			return 0, false, err
		}
		i := bytes.Index(w, magic)
		if i < 0 {
			pos += int64(max(1, len(w)-len(magic)+1))
			continue
		}
		q := pos + int64(i)
		b, err := rd.at(q, frame.HeaderSize)
		if err != nil {
			return 0, false, err
		}
		if h, err := frame.DecodeHeader(b); err == nil && limit-q >= int64(h.Size()) {
			if b, err = rd.at(q, h.Size()); err != nil {
				return 0, false, err
			}
			if _, _, err := frame.Decode(b); err == nil {
				return q, true, nil
			}
		}
		pos = q + 1
	}
	return 0, false, nil
}
