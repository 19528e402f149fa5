// Host processes in hosts mode: started, restored and stopped through the
// CLI (new/restore --detach, stop), found and killed through /proc, their
// exits described and their logs read.

package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// newDetached creates a session live in a new host.
func (s *soaker) newDetached(ctx context.Context, title string) (*session, error) {
	out, errb, code, err := s.looprig(ctx, "new", "--scratch", "--detach", "--json", "--title", title)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("exit %d: %s", code, firstLine(out, errb))
	}
	var v struct {
		ID       string `json:"id"`
		Epoch    uint64 `json:"epoch"`
		PID      int    `json:"pid"`
		Detached bool   `json:"detached"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.ID == "" || v.PID <= 0 || v.Epoch == 0 || !v.Detached {
		return nil, fmt.Errorf("new --detach --json said %q: %v", out, err)
	}
	s.hosts[v.ID] = v.PID
	return &session{id: v.ID, acked: map[uint64]string{}, pid: v.PID, epoch: v.Epoch}, nil
}

// restoreDetached restores the session in a new host.
func (s *soaker) restoreDetached(ctx context.Context, sess *session) error {
	out, errb, code, err := s.looprig(ctx, "restore", sess.id, "--detach", "--json")
	if err != nil || code != 0 {
		return fmt.Errorf("exit %d %v: %s", code, err, firstLine(out, errb))
	}
	var v struct {
		Epoch    uint64 `json:"epoch"`
		PID      int    `json:"pid"`
		Detached bool   `json:"detached"`
	}
	if err := json.Unmarshal(firstJSON(out), &v); err != nil || v.PID <= 0 || v.Epoch == 0 || !v.Detached {
		return fmt.Errorf("restore --detach --json said %q: %v", out, err)
	}
	s.hosts[sess.id] = v.PID
	sess.pid, sess.epoch, sess.restored = v.PID, v.Epoch, true
	return nil
}

// stopHost stops the host pid of session id and waits for it to exit,
// killing it if the stop fails.
func (s *soaker) stopHost(ctx context.Context, id string, pid int) error {
	delete(s.hosts, id)
	out, errb, code, err := s.looprig(ctx, "stop", id, "--json")
	if err != nil || code != 0 {
		s.killHost(pid)
		return fmt.Errorf("stop %.8s (host %d): exit %d %v: %s", id, pid, code, err, firstLine(out, errb))
	}
	var v struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.PID != pid {
		s.killHost(pid)
		return fmt.Errorf("stop %.8s: stop --json said %q (%v), want host %d", id, out, err, pid)
	}
	if !waitGone(pid, hostExitWait) {
		s.killHost(pid)
		return fmt.Errorf("stop %.8s: host %d still ran %v after stop returned", id, pid, hostExitWait)
	}
	return nil
}

// killHost SIGKILLs pid if it is a host of the store, and waits for it.
func (s *soaker) killHost(pid int) {
	if pid > 0 && s.isOurHost(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		waitGone(pid, hostExitWait)
	}
}

// killStrayHosts kills every process serving a session of the store
// (`looprig host --store STORE ...`, found in /proc) and returns their
// pids.
func (s *soaker) killStrayHosts() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || !s.isOurHost(pid) {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		waitGone(pid, hostExitWait)
		pids = append(pids, pid)
	}
	return pids
}

// isOurHost says whether pid is alive and a host of the soak's store: its
// command line is `BINARY host ... --store STORE ...`, as host.Start
// starts it.
func (s *soaker) isOurHost(pid int) bool {
	if !alive(pid) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	if len(args) < 4 || args[1] != "host" {
		return false
	}
	for i := 2; i+1 < len(args); i++ {
		if args[i] == "--store" && args[i+1] == s.store {
			return true
		}
	}
	return false
}

// alive says whether pid runs: a zombie does not (a host is not the
// soak's child once its starter exited, and whoever reaps it may be slow).
func alive(pid int) bool {
	// A process SIGKILLed is gone when its last thread is: its leader can
	// be a zombie while other threads still exit, holding its descriptors
	// (and its flocks).
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return taskAlive(fmt.Sprintf("/proc/%d/stat", pid))
	}
	for _, t := range tasks {
		if taskAlive(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name())) {
			return true
		}
	}
	return false
}

// taskAlive reports whether the thread whose stat file is path runs (is
// neither a zombie nor dead).
func taskAlive(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

// waitGone waits up to d for pid to exit.
func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// exitStatus is a waited process's exit code, or the signal that killed
// it.
func exitStatus(waitErr error) (code int, sig syscall.Signal) {
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) {
		if waitErr != nil {
			return -1, 0
		}
		return 0, 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal()
	}
	return ee.ExitCode(), 0
}

func describeExit(code int, sig syscall.Signal) string {
	if sig != 0 {
		return "signal " + sig.String()
	}
	return "exit " + strconv.Itoa(code)
}

// hostLogTail is the end of session id's host log (<runtime>/looprig/
// <hash>/<id>.log), for a failed trial's diagnostics.
func (s *soaker) hostLogTail(id string) string {
	paths, _ := filepath.Glob(filepath.Join(s.runtime, "looprig", "*", id+".log"))
	if len(paths) == 0 {
		return ""
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}
