package benchmarks

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"looprig/internal/tmuxtest"
	"looprig/rig"
)

// BenchmarkTUIAttach: from starting the TUI (the built command in a tmux
// pane, 200×60) to its first frame showing the history tail of a live
// session whose journal holds a 100k-record turn: the session is restored
// into a background host first (`looprig restore --detach`), so the TUI
// attaches to it and follows it through the host from its last 10,000
// records (tui's tailReplay; the host's status stands in for the records
// before). The frame is found by reading the pane every 5 ms, which the
// figure includes. Target (docs/ARCHITECTURE.md, "Performance figures"):
// ≤ 150 ms.
//
// The baseline, in the same run, is reading every event of that journal in
// this process (rig.ReadEvents): what any view of the whole history costs.
//
// Metrics: ours-ms (mean of the rounds), base-ms, ratio (base/ours).
func BenchmarkTUIAttach(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Skip("tmux is not installed")
	}
	const records = 100_000
	bin := looprigBinary(b)
	fx := newReplayFixture(b, records)
	home := shortPrivateDir(b)
	store := filepath.Join(home, "store")
	if out, err := exec.Command("cp", "-a", fx.dir, store).CombinedOutput(); err != nil {
		b.Fatalf("copy the fixture: %v\n%s", err, out)
	}
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"), "XDG_RUNTIME_DIR=" + home, "TERM=xterm-256color"}
	looprig := func(args ...string) {
		ctx, cancel := context.WithTimeout(bg, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--store", store}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("looprig %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	looprig("restore", "--detach", fx.id.String())
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "--store", store, "stop", fx.id.String())
		cmd.Env = append(os.Environ(), env...)
		cmd.Run()
	})
	// The last output line of the long turn, as the events pane shows it.
	want := fmt.Sprintf("output line %010d", records-1)
	tm := tmuxtest.New(b)
	tmux := tm.Try
	quoted := make([]string, len(env))
	for i, e := range env {
		quoted[i] = strconv.Quote(e)
	}
	line := fmt.Sprintf("exec env %s %q --store %q", strings.Join(quoted, " "), bin, store)
	rounds := pick(3, 5)
	for range b.N {
		var ours, base side
		interleave(rounds, func() {
			t0 := time.Now()
			if out, err := tmux("new-session", "-d", "-s", "attach", "-x", "200", "-y", "60", "sh", "-c", line); err != nil {
				b.Fatalf("tmux: %v\n%s", err, out)
			}
			for {
				out, _ := tmux("capture-pane", "-p", "-t", "attach")
				if bytes.Contains(out, []byte(want)) {
					break
				}
				if time.Since(t0) > time.Minute {
					b.Fatalf("no frame showed %q within a minute:\n%s", want, out)
				}
				time.Sleep(5 * time.Millisecond)
			}
			ours.add(1, time.Since(t0))
			tmux("kill-session", "-t", "attach")
		}, func() {
			st := openStore(b, store)
			defer st.Close()
			t0 := time.Now()
			rd, err := rig.ReadEvents(bg, st, fx.id, 0)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rd.Next() {
				n++
			}
			if err := rd.Err(); err != nil || n < records {
				b.Fatalf("read %d events: %v", n, err)
			}
			rd.Close()
			base.add(1, time.Since(t0))
		})
		b.ReportMetric(ours.perOp()/1e3, "ours-ms")
		b.ReportMetric(base.perOp()/1e3, "base-ms")
		b.ReportMetric(base.perOp()/ours.perOp(), "ratio")
	}
}
