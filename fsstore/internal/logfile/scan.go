package logfile

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"looprig/rig/storage"
)

// catchUp validates frames between the cached end and the end of the file
// and advances the cached state, repairing a torn tail. The caller holds
// the token and the file lock.
func (l *Log) catchUp() error {
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: l.path, Err: err}
	}
	size := st.Size
	if size == l.end {
		return nil
	}
	if size < l.end {
		// Records we had validated are gone: trust nothing and rescan.
		l.reset()
	}
	return l.scan(size)
}

// scan validates frames from the cached end to size, repairing a torn
// tail, and advances the cached state. On corruption the state and the
// file are left as they were.
func (l *Log) scan(size int64) error {
	rd := newReader(l.f, l.end, size)
	pos, tip := l.end, l.tip
	nIndex := len(l.index)
	corrupt := func(off int64, reason string, err error) error {
		l.index = l.index[:nIndex]
		return &storage.CorruptError{Name: l.name, Path: l.path, Offset: off, Reason: reason, Err: err}
	}
	defer rd.release()
	for pos < size {
		fr, n, derr, err := rd.frameAt(pos)
		if err != nil {
			l.index = l.index[:nIndex]
			return err
		}
		if derr != nil {
			// A bad frame: a torn tail if nothing valid follows it.
			if err := l.repairTail(&rd, pos, size, derr); err != nil {
				l.index = l.index[:nIndex]
				return err
			}
			break
		}
		if fr.Seq != tip+1 {
			return corrupt(pos, fmt.Sprintf("sequence %d where %d was expected", fr.Seq, tip+1), nil)
		}
		tip = fr.Seq
		if (tip-1)%l.interval == 0 {
			l.index = append(l.index, pos)
		}
		pos += int64(n)
	}
	l.end, l.tip = pos, tip
	return nil
}
