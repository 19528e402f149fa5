package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"looprig/rig"
	"looprig/rig/explain"
)

// ReadyFDEnv names the file descriptor on which a host started by Start
// reports, once, that it serves its session or why it could not. A host
// run by hand (no ReadyFDEnv) reports nothing there.
const ReadyFDEnv = "LOOPRIG_HOST_READY_FD"

// maxReadyLine bounds the one line a host writes on its ready descriptor.
const maxReadyLine = 1 << 20

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

// readyMsg is the line on the ready descriptor: ok with Ready, or the
// error that stopped the host.
type readyMsg struct {
	OK    bool         `json:"ok"`
	Ready *Ready       `json:"ready,omitempty"`
	Error *RemoteError `json:"error,omitempty"`
}

// Reporter is a host's end of its ready descriptor. A nil *Reporter (a host
// run by hand) reports nothing.
type Reporter struct {
	f *os.File
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

func (r *Reporter) send(m readyMsg) error {
	if r == nil || r.f == nil {
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
		b, _ = json.Marshal(readyMsg{Error: &RemoteError{Type: explain.TypeError, Kind: explain.KindError, Message: "host: ready report too large"}})
	}
	_, err = f.Write(append(b, '\n'))
	return err
}

// decodeReady reads the line a host reported.
func decodeReady(line []byte) (Ready, error) {
	var m readyMsg
	if err := json.Unmarshal(line, &m); err != nil {
		return Ready{}, fmt.Errorf("host: unreadable ready report: %w", err)
	}
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
