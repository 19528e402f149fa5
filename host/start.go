package host

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// StartSpec says how to start a host process.
type StartSpec struct {
	// Exe is the looprig binary; os.Executable() when empty.
	Exe string
	// Args follow the binary, e.g. {"host", "--store", dir, id}.
	Args []string
	// Env is the host's environment; os.Environ() when nil.
	Env []string
	// Dir is the host's working directory; "/" when empty, so that a host
	// never keeps a directory (a removable mount) busy.
	Dir string
	// Progress, when not nil, is called on Start's goroutine with how far
	// the host is before it reports (a restore bringing the workspace
	// back from its checkpoint), now and then.
	Progress func(Progress)
}

// HostExitedError: a host ended before it reported whether it serves its
// session.
type HostExitedError struct {
	PID    int
	Status string // as os.ProcessState says it: "exit status 2", "signal: killed"
}

func (e *HostExitedError) Error() string {
	return fmt.Sprintf("host process %d ended before it was ready (%s)", e.PID, e.Status)
}

// startGrace bounds the wait for a host's exit status once its ready
// descriptor closed without a report.
const startGrace = 5 * time.Second

// Start starts a host detached from the caller's terminal and session
// (setsid; stdin, stdout and stderr on /dev/null — the host logs to its
// own file) and waits until it reports, on a descriptor passed to it
// (ReadyFDEnv), that it serves its session, or why it could not: the
// host's error comes back as *RemoteError. What the host says of its
// progress before that goes to spec.Progress. A host that ends without a
// report is *HostExitedError. When ctx ends first, the host is killed.
//
// The host is the caller's child until the caller exits; Start reaps it
// when it exits, from a goroutine that ends with it, so no zombie is left
// (a zombie keeps its pid and so looks alive to a liveness check).
func Start(ctx context.Context, spec StartSpec) (Ready, error) {
	exe := spec.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return Ready{}, fmt.Errorf("host: find the looprig binary: %w", err)
		}
	}
	dir := spec.Dir
	if dir == "" {
		dir = "/"
	}
	env := spec.Env
	if env == nil {
		env = os.Environ()
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return Ready{}, fmt.Errorf("host: ready pipe: %w", err)
	}
	defer pr.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		pw.Close()
		return Ready{}, fmt.Errorf("host: %w", err)
	}
	defer devnull.Close()

	cmd := exec.Command(exe, spec.Args...)
	cmd.Dir = dir
	// ExtraFiles[0] is descriptor 3 in the host.
	cmd.Env = append(env[:len(env):len(env)], ReadyFDEnv+"=3")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return Ready{}, fmt.Errorf("host: start %s: %w", exe, err)
	}
	pw.Close() // the host holds the only write end now
	exited := make(chan struct{})
	var state *os.ProcessState
	go func() {
		defer close(exited)
		_ = cmd.Wait()
		state = cmd.ProcessState
	}()

	// The reader ends with the report, the descriptor's end, or pr's
	// close; progress lines before the report go to the latest slot,
	// replacing one not taken yet.
	type result struct {
		line []byte
		err  error
	}
	got := make(chan result, 1)
	progress := make(chan Progress, 1)
	go func() {
		br := bufio.NewReaderSize(pr, 4096)
		for {
			line, err := readLine(br, maxReadyLine)
			if err != nil || len(line) == 0 {
				got <- result{line, err}
				return
			}
			_, p, derr := decodeReady(line)
			if derr != nil || p == nil {
				got <- result{line, err}
				return
			}
			for {
				select {
				case progress <- *p:
				default:
					select {
					case <-progress:
					default:
					}
					continue
				}
				break
			}
		}
	}()
	for {
		select {
		case p := <-progress:
			if spec.Progress != nil {
				spec.Progress(p)
			}
			continue
		case r := <-got:
			if len(r.line) > 0 && r.line[len(r.line)-1] == '\n' {
				rd, _, err := decodeReady(r.line)
				return rd, err
			}
			select {
			case <-exited:
				return Ready{}, &HostExitedError{PID: cmd.Process.Pid, Status: state.String()}
			case <-time.After(startGrace):
				return Ready{}, &HostExitedError{PID: cmd.Process.Pid, Status: "closed its ready descriptor without a report; still running"}
			}
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			pr.Close() // ends the reader
			return Ready{}, fmt.Errorf("host: waiting for process %s to be ready: %w", strconv.Itoa(cmd.Process.Pid), ctx.Err())
		}
	}
}

// readLine reads a line of at most max bytes, its newline included; a
// longer one is cut at max (and has no newline: no report).
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > max {
			return line[:max], nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// ErrNotHosted: no host serves the session on this machine.
var ErrNotHosted = errors.New("host: the session is not hosted on this machine")
