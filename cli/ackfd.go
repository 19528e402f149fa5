package cli

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"looprig/rig/event"
)

// ackFDEnv names the acknowledgement side channel of `looprig run`, used by
// crash tests (scripts/soak) and deliberately left out of --help:
//
//	LOOPRIG_ACK_FD=3 looprig run ID -- INPUT   3>acks.txt
//
// makes run write one line "SEQ TYPE\n" (for example "17 TurnOutput") to
// file descriptor 3 for every journal record of the session it sees while
// following the turn. Those come from the session's hub, which delivers an
// enduring event only after the journal append holding it returned — after
// fdatasync — or from the journal itself when the subscription fell
// behind. So each line is a promise: record SEQ, of that type, survives a
// crash of this process at any later moment. Each line is one write(2), so
// a SIGKILL never leaves half a line. The descriptor is not passed on to
// the turn's processes.
const ackFDEnv = "LOOPRIG_ACK_FD"

// ackWriter writes acknowledged sequences; a nil *ackWriter writes nothing.
type ackWriter struct {
	mu  sync.Mutex
	f   *os.File
	buf []byte
	err error
}

// openAckFD returns the writer LOOPRIG_ACK_FD names, nil when it is unset.
func openAckFD() (*ackWriter, error) {
	v := os.Getenv(ackFDEnv)
	if v == "" {
		return nil, nil
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, usageErr("run", fmt.Sprintf("%s=%q: want a file descriptor number of 3 or more", ackFDEnv, v))
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		return nil, usageErr("run", fmt.Sprintf("%s=%d: descriptor %d is not open: %v", ackFDEnv, fd, fd, err))
	}
	unix.CloseOnExec(fd) // the turn's shell must not inherit it
	return &ackWriter{f: os.NewFile(uintptr(fd), "ack-fd")}, nil
}

// record acknowledges env if it is a journal record (seq > 0). A failed
// write ends the channel silently: the acknowledgements are a subset of
// what is durable, never more.
func (a *ackWriter) record(env event.Envelope) {
	if a == nil || env.Seq == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return
	}
	a.buf = strconv.AppendUint(a.buf[:0], env.Seq, 10)
	a.buf = append(a.buf, ' ')
	a.buf = append(a.buf, env.Event.Type()...)
	a.buf = append(a.buf, '\n')
	_, a.err = a.f.Write(a.buf)
}
