package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"looprig/rig"
	"looprig/rig/fault"
)

// ReadyFDEnv names the file descriptor on which a host started by Start
// reports, once, that it serves its session or why it could not, and
// before that, now and then, how far its restore is. A host run by hand
// (no ReadyFDEnv) reports nothing there.
const ReadyFDEnv = "LOOPRIG_HOST_READY_FD"

// maxReadyLine bounds a line a host writes on its ready descriptor.
const maxReadyLine = 1 << 20

// readyProgressEvery is how often a host reports its progress at most.
const readyProgressEvery = 100 * time.Millisecond

// Ready is what a host reports once it serves its session: the facts a
// client needs to attach, and what restoring the session did.
type Ready struct {
	Session   string `json:"session"`
	Title     string `json:"title"`
	Profile   string `json:"profile"`
	Shell     string `json:"shell"` // the shell its turns run in
	Workspace string `json:"workspace"`
	PID       int    `json:"pid"`
	Epoch     uint64 `json:"epoch"`
	Socket    string `json:"socket"`
	Log       string `json:"log,omitempty"`
	// Created is true when the host created the session, false when it
	// restored it; Restored says what the restore did.
	Created  bool             `json:"created"`
	Restored *rig.RestoreInfo `json:"restored,omitempty"`
}

// readyMsg is a line on the ready descriptor: the last one is ok with
// Ready, or the error that stopped the host; those before it (none, or
// many) carry Progress alone.
type readyMsg struct {
	OK       bool         `json:"ok"`
	Ready    *Ready       `json:"ready,omitempty"`
	Error    *RemoteError `json:"error,omitempty"`
	Progress *Progress    `json:"progress,omitempty"`
}

// Reporter is a host's end of its ready descriptor. A nil *Reporter (a host
// run by hand) reports nothing. Its methods are safe for concurrent use.
type Reporter struct {
	mu   sync.Mutex
	f    *os.File
	last time.Time // when progress was last written
}

// OpenReporter returns the Reporter ReadyFDEnv names, nil when it is unset.
// The descriptor is marked close-on-exec so that the session's turns never
// inherit it (a turn holding it open would keep a client waiting).
func OpenReporter() (*Reporter, error) {
	v := os.Getenv(ReadyFDEnv)
	if v == "" {
		return nil, nil
	}
	os.Unsetenv(ReadyFDEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: want a file descriptor number of 3 or more", ReadyFDEnv, v)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		return nil, fmt.Errorf("%s=%d: descriptor %d is not open: %w", ReadyFDEnv, fd, fd, err)
	}
	unix.CloseOnExec(fd)
	return &Reporter{f: os.NewFile(uintptr(fd), "host-ready")}, nil
}

// Ready reports that the host serves its session, and closes the
// descriptor.
func (r *Reporter) Ready(rd Ready) error {
	return r.send(readyMsg{OK: true, Ready: &rd})
}

// Fail reports the error that stops the host, in the shape of the CLI's
// JSON errors (Describe), and closes the descriptor.
func (r *Reporter) Fail(err error) error {
	return r.send(readyMsg{Error: Describe(err)})
}

// Materializing reports how far the restore is in bringing the workspace
// back from its checkpoint (bytes written of the total), at most every
// readyProgressEvery, and the last bytes always; it is
// rig.WithMaterializeProgress's function. A write that fails is ignored:
// the report that follows says what matters.
func (r *Reporter) Materializing(done, total int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return
	}
	now := time.Now()
	if done < total && now.Sub(r.last) < readyProgressEvery {
		return
	}
	r.last = now
	b, err := json.Marshal(readyMsg{Progress: &Progress{Materialize: &MaterializeProgress{Done: done, Total: total}}})
	if err == nil {
		r.f.Write(append(b, '\n'))
	}
}

func (r *Reporter) send(m readyMsg) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	f := r.f
	r.f = nil
	defer f.Close()
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(b) >= maxReadyLine {
		b, _ = json.Marshal(readyMsg{Error: &RemoteError{Type: fault.TypeError, Kind: fault.KindError, Message: "host: ready report too large"}})
	}
	_, err = f.Write(append(b, '\n'))
	return err
}

// decodeReady reads a line a host reported: its progress (p not nil, a
// line before the report), or the report.
func decodeReady(line []byte) (rd Ready, p *Progress, err error) {
	var m readyMsg
	if err := json.Unmarshal(line, &m); err != nil {
		return Ready{}, nil, fmt.Errorf("host: unreadable ready report: %w", err)
	}
	if !m.OK && m.Error == nil && m.Progress != nil {
		return Ready{}, m.Progress, nil
	}
	rd, err = decodeReport(m)
	return rd, nil, err
}

// decodeReport is the report m says.
func decodeReport(m readyMsg) (Ready, error) {
	if !m.OK {
		if m.Error == nil {
			return Ready{}, errors.New("host: failed without saying why")
		}
		return Ready{}, m.Error
	}
	if m.Ready == nil || m.Ready.Session == "" || m.Ready.Socket == "" {
		return Ready{}, errors.New("host: ready report without a session or socket")
	}
	return *m.Ready, nil
}
