//go:build linux

package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPTYEchoOffDuringWriteIsHidden: a write that begins with echo on but
// waits for room while the turn turns echo off (as read -s does) and then
// reads it is hidden: the turn may have read it unechoed. Write says so
// (Deliver's report, which the runtime journals by).
func TestPTYEchoOffDuringWriteIsHidden(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c := NewConsole(0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, sink := startPTY(t, ctx, Config{}, c, "echo ready; read x < '"+fifo+"'; stty -echo; echo off; cat >/dev/null")
	sink.waitOutput(t, Stdout, "ready\n")
	if c.EchoOff() {
		t.Fatal("echo off before the turn turned it off")
	}
	big := []byte(strings.Repeat("p\n", 1<<19)) // 1 MiB of lines: more than the terminal holds
	type result struct {
		hidden bool
		err    error
	}
	done := make(chan result, 1)
	go func() {
		hidden, err := c.Write(context.Background(), big)
		done <- result{hidden, err}
	}()
	time.Sleep(200 * time.Millisecond) // the write fills the terminal and waits
	select {
	case r := <-done:
		t.Fatalf("Write returned before the turn read its input: %+v", r)
	default:
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Write still blocked after the turn began reading")
	}
	if r.err != nil || !r.hidden {
		t.Errorf("Write = %+v; want hidden: the turn turned echo off before it read the input", r)
	}
	cancel()
	await(t, ch, 30*time.Second)
}
