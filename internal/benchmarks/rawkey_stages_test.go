package benchmarks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"looprig/host"
	"looprig/internal/testbin"
	"looprig/rig/event"
)

// BenchmarkRawKeyStages: where the time of a raw key goes between a
// client of the host and the turn's full-screen program, on a background
// host with the default store (fsstore): keys typed one at a time, as
// attach sends a full-screen program's keys (host.Client.SendInput), to
// the scripted full-screen program (internal/testbin/fullscreen), each
// timed until the program's redrawn line comes back as an OutputDelta on
// the client's subscription (echo-ms), and until the input's reply
// (reply-ms: the host journals the input, then writes the pty). For
// comparison, fdatasync-ms is an fdatasync of a small append to a file
// in the store's directory, as a journal append costs at least.
//
// Metrics: echo-p50-ms, echo-p99-ms, reply-p50-ms, reply-p99-ms,
// fdatasync-p50-ms, fdatasync-p99-ms.
func BenchmarkRawKeyStages(b *testing.B) {
	keys := pick(100, 300)
	for range b.N {
		h := startDetachedHost(b)
		bin := looprigBinary(b)
		fs := testbin.Program(b, "looprig/internal/testbin/fullscreen")
		run := exec.Command(bin, "--store", h.store, "run", h.id, "--detach", "--", fs, "-nobell")
		run.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(h.rt, "config"), "XDG_STATE_HOME="+filepath.Join(h.rt, "state"))
		if out, err := run.CombinedOutput(); err != nil {
			b.Fatalf("run --detach: %v\n%s", err, out)
		}
		ctx, cancel := context.WithTimeout(bg, 5*time.Minute)
		c, err := host.Connect(ctx, h.storeKey, h.id, host.WithClientVersion("bench"))
		if err != nil {
			b.Fatal(err)
		}
		st, err := c.Status(ctx)
		if err != nil {
			b.Fatal(err)
		}
		sub, err := c.Subscribe(ctx, st.Tip)
		if err != nil {
			b.Fatal(err)
		}
		deltas := make(chan string, 1024)
		go func() {
			defer close(deltas)
			for {
				env, err := sub.Next(ctx)
				if err != nil {
					return
				}
				if d, ok := env.Event.(event.OutputDelta); ok {
					deltas <- d.Text
				}
			}
		}()
		for end := time.Now().Add(time.Minute); ; {
			s, err := c.Status(ctx)
			if err == nil && s.Terminal && s.EchoOff {
				break
			}
			if time.Now().After(end) {
				b.Fatal("the full-screen program did not turn echo off")
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		for len(deltas) > 0 {
			<-deltas
		}
		var echo, reply side
		typed := ""
		for i := range keys {
			key := string("abcdefghijklmnoprstuvwxyz"[i%25]) // no q: it ends the program
			if i%20 == 19 {
				key, typed = "\r", ""
			} else {
				typed += key
			}
			want := "submitted: "
			if key != "\r" {
				want = typed
			}
			t0 := time.Now()
			if _, err := c.SendInput(ctx, key, "bench"); err != nil {
				b.Fatalf("key %d: %v", i, err)
			}
			reply.lat = append(reply.lat, time.Since(t0))
			for seen := ""; !strings.Contains(seen, want); {
				d, ok := <-deltas
				if !ok {
					b.Fatal("the subscription ended")
				}
				seen += d
			}
			echo.lat = append(echo.lat, time.Since(t0))
		}
		sync := fdatasyncs(b, h.rt, keys)
		b.ReportMetric(echo.pct(0.50)/1e3, "echo-p50-ms")
		b.ReportMetric(echo.pct(0.99)/1e3, "echo-p99-ms")
		b.ReportMetric(reply.pct(0.50)/1e3, "reply-p50-ms")
		b.ReportMetric(reply.pct(0.99)/1e3, "reply-p99-ms")
		b.ReportMetric(sync.pct(0.50)/1e3, "fdatasync-p50-ms")
		b.ReportMetric(sync.pct(0.99)/1e3, "fdatasync-p99-ms")
		c.Close()
		cancel()
	}
}

// fdatasyncs times n small appends to a file in dir, each fdatasync'd.
func fdatasyncs(b *testing.B, dir string, n int) side {
	f, err := os.CreateTemp(dir, "sync")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	var s side
	line := []byte(fmt.Sprintf("%0100d\n", 0))
	for range n {
		t0 := time.Now()
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		s.lat = append(s.lat, time.Since(t0))
	}
	return s
}
