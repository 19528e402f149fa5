package faulttest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig/hub"
)

// helper is a running helper process and what it printed.
type helper struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *syncBuffer
	done   chan error
}

func startHelper(t *testing.T, role string, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), envHelper+"="+role), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, lines: make(chan string, 1<<16), stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); <-h.done })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
		h.done <- cmd.Wait()
		close(h.done)
	}()
	return h
}

// waitLine returns the first line starting with prefix, skipping others
// (acks are collected by the caller through collect).
func (h *helper) waitLine(t *testing.T, prefix string, acked map[uint64]string) string {
	t.Helper()
	timeout := time.After(helperTimeout)
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				t.Fatalf("helper ended before printing %q; stderr:\n%s", prefix, h.stderr)
			}
			if collectAck(t, l, acked) {
				continue
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			t.Fatalf("helper did not print %q within %v; stderr:\n%s", prefix, helperTimeout, h.stderr)
		}
	}
}

// wait drains the helper's output into acked (and returns the other
// lines) until it exits, and returns its wait status.
func (h *helper) wait(t *testing.T, acked map[uint64]string) (syscall.WaitStatus, []string) {
	t.Helper()
	var other []string
	timeout := time.After(helperTimeout)
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				err := <-h.done
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return ee.Sys().(syscall.WaitStatus), other
				}
				if err != nil {
					t.Fatalf("helper: %v", err)
				}
				return h.cmd.ProcessState.Sys().(syscall.WaitStatus), other
			}
			if !collectAck(t, l, acked) {
				other = append(other, l)
			}
		case <-timeout:
			t.Fatalf("helper did not exit within %v; stderr:\n%s", helperTimeout, h.stderr)
		}
	}
}

// collectAck records an "ack SEQ TYPE" line in acked.
func collectAck(t *testing.T, line string, acked map[uint64]string) bool {
	rest, ok := strings.CutPrefix(line, "ack ")
	if !ok {
		return false
	}
	seqStr, typ, _ := strings.Cut(rest, " ")
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if err != nil {
		t.Fatalf("helper printed %q", line)
	}
	if acked != nil {
		acked[seq] = typ
	}
	return true
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// out serialises the helper's stdout lines (acks come from a goroutine).
var out struct {
	sync.Mutex
}

func say(format string, args ...any) {
	out.Lock()
	defer out.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

// ackAll prints "ack SEQ TYPE" for every journaled event the session
// delivers, until the subscription ends. The hub delivers an enduring
// event only once its append is durable.
func ackAll(sub *hub.Subscription) {
	for env := range sub.C() {
		if env.Seq > 0 {
			say("ack %d %s", env.Seq, env.Event.Type())
		}
	}
}

func runHelper(role string) int {
	dir, idStr := os.Getenv(envDir), os.Getenv(envSession)
	id, err := uuid.Parse(idStr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: bad session id", idStr)
		return 2
	}
	switch role {
	case "create":
		return createHelper(dir)
	case "crash":
		return crashHelper(dir, id)
	case "appender":
		return appenderHelper(dir, id)
	}
	fmt.Fprintln(os.Stderr, "helper: unknown role", role)
	return 2
}
