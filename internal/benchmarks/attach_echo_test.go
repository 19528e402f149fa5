package benchmarks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"looprig/internal/testbin"
	"looprig/internal/tmuxtest"
	"looprig/natsstore/embedded"
)

// BenchmarkAttachEchoVsTmux: a line typed into `looprig attach` (the
// built command, in a tmux pane) to a turn running cat in a background
// host, until cat's copy of it shows on the pane (the line, then cat's
// copy: the turn's echo of it is the line already shown); against the
// same line typed into `tmux attach` (a nested tmux client in a pane) to
// a pane of another tmux server running cat, in interleaved rounds. Both
// are typed and read the same way, with send-keys and capture-pane polled
// every half millisecond, whose cost is in both figures.
//
// Sub-benchmarks: line, the turn running cat as above; fullscreen, the
// turn running the scripted full-screen program (internal/testbin/
// fullscreen) whose screen attach passes through, keys raw: a line and
// Enter typed, timed until the program's "submitted: LINE" row shows
// (against the same program in the tmux pane). Both on a directory store;
// line-nats is line on an embedded NATS server (each typed line is
// journaled there before it reaches the turn).
//
// LOOPRIG_ECHO_LINES sets the lines typed per round (default 50, 20
// with -short; 4 rounds a side).
//
// Metrics: ours-p50-ms, ours-p99-ms, base-p50-ms, base-p99-ms (tmux
// attach), ratio (ours p99 / tmux p99).
func BenchmarkAttachEchoVsTmux(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Skip("tmux is not installed")
	}
	b.Run("line", func(b *testing.B) { attachEcho(b, "", "cat", "cat", "turn 0: cat", "", 2, "") })
	b.Run("fullscreen", func(b *testing.B) {
		fs := testbin.Program(b, "looprig/internal/testbin/fullscreen")
		attachEcho(b, "", fs+" -nobell", fs, "bottom row: q leaves", "bottom row: q leaves", 1, "submitted: ")
	})
	b.Run("line-nats", func(b *testing.B) {
		srv, err := embedded.Start(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(srv.Shutdown)
		attachEcho(b, srv.URL(), "cat", "cat", "turn 0: cat", "", 2, "")
	})
}

// attachEcho measures a turn running program on store (a NATS URL, ""
// for a directory store; the base's pane runs direct), shown once ready
// shows (baseReady in the base's pane, "" for nothing to wait for); a
// line is echoed once it shows copies times, after prefix.
func attachEcho(b *testing.B, store, program, direct, ready, baseReady string, copies int, prefix string) {
	rounds, lines := pick(2, 4), pick(20, 50)
	if n, err := strconv.Atoi(os.Getenv("LOOPRIG_ECHO_LINES")); err == nil && n > 0 {
		lines = n // per round: 250 makes the p99 of 1,000 lines a side the 10th slowest, not the 2nd
	}
	bin := looprigBinary(b)
	for range b.N {
		h := startDetachedHostOn(b, store)
		env := h.env()
		run := exec.Command("/bin/sh", "-c", fmt.Sprintf("env %s %q --store %q run %s --detach -- %s", env, bin, h.store, h.id, program))
		if out, err := run.CombinedOutput(); err != nil {
			b.Fatalf("run --detach: %v\n%s", err, out)
		}
		srv, inner := tmuxtest.New(b), tmuxtest.New(b)
		srv.Start("ours", 120, 40, "/bin/sh", "-c", fmt.Sprintf("env %s %q --store %q attach %s", env, bin, h.store, h.id))
		inner.Start("cat", 120, 40, "env", "TERM=xterm-256color", direct)
		srv.Start("base", 120, 40, "/bin/sh", "-c", fmt.Sprintf("TMUX= tmux -L %s -f /dev/null attach -t cat", inner.Socket()))
		srv.WaitFor("ours", time.Minute, ready)
		if baseReady != "" {
			srv.WaitFor("base", time.Minute, baseReady)
		}
		time.Sleep(500 * time.Millisecond) // the turn has its terminal; attach follows it
		var ours, tmux side
		round := 0
		interleave(rounds, func() {
			ours.lat = append(ours.lat, typedLines(b, srv, "ours", round, lines, copies, prefix)...)
			round++
		}, func() {
			tmux.lat = append(tmux.lat, typedLines(b, srv, "base", round, lines, copies, prefix)...)
			round++
		})
		b.ReportMetric(ours.pct(0.50)/1e3, "ours-p50-ms")
		b.ReportMetric(ours.pct(0.99)/1e3, "ours-p99-ms")
		b.ReportMetric(tmux.pct(0.50)/1e3, "base-p50-ms")
		b.ReportMetric(tmux.pct(0.99)/1e3, "base-p99-ms")
		b.ReportMetric(ours.pct(0.99)/tmux.pct(0.99), "ratio")
	}
}

// typedLines types lines lines into pane name, one at a time, each timed
// from the send to the moment prefix+line shows copies times (cat's copy
// of it: the line, then the copy; the full-screen program's
// "submitted: " row).
func typedLines(b *testing.B, srv *tmuxtest.Server, name string, round, lines, copies int, prefix string) []time.Duration {
	b.Helper()
	lat := make([]time.Duration, 0, lines)
	for i := range lines {
		mark := fmt.Sprintf("m%dr%dl%dz", len(name), round, i)
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		t0 := time.Now()
		if out, err := srv.Command(ctx, "send-keys", "-t", name, mark, "Enter").CombinedOutput(); err != nil {
			cancel()
			b.Fatalf("send-keys: %v\n%s", err, out)
		}
		for {
			out, err := srv.Command(ctx, "capture-pane", "-p", "-t", name).Output()
			if err != nil {
				cancel()
				last, _ := srv.Command(bg, "capture-pane", "-p", "-t", name).Output()
				b.Fatalf("%s: %s not shown: %v; the pane:\n%s", name, mark, err, last)
			}
			if strings.Count(string(out), prefix+mark) >= copies {
				break
			}
			time.Sleep(500 * time.Microsecond)
		}
		lat = append(lat, time.Since(t0))
		cancel()
	}
	return lat
}
