package benchmarks

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"looprig/host"
	"looprig/internal/tmuxtest"
	"looprig/rig"
	"looprig/rig/event"
)

// BenchmarkOutputVsTmux: live output of a turn to one attached client,
// against tmux's control mode, the nearest peer: a program printing
// timestamped lines at 2,000 lines/s (this test binary as
// TestHostLineGenerator, one write per line) runs as a looprig turn in a
// real background host (`looprig new --detach`, the built command) and is
// followed by a client in this process as every presenter follows one
// (rig.Follow over the host's stream, output through rig.Transcript); and
// in a tmux pane whose control-mode client (`tmux -C`) this process reads
// the %output notifications of, in interleaved rounds. Each side is a
// server process and a client process, as a person's would be. The latency of a line is
// the time from just before its write(2) to the moment the client has it:
// the transcript's chunk that completed it, or the %output line that did.
// Target (docs/ARCHITECTURE.md, "Performance figures"): looprig's p99 ≤
// 1.5 × tmux's.
//
// Metrics: ours-p50-ms, ours-p99-ms, base-p50-ms, base-p99-ms (tmux),
// ratio (ours p99 / tmux p99).
func BenchmarkOutputVsTmux(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Skip("tmux is not installed")
	}
	const rate = 2_000
	rounds, lines := pick(2, 4), 10_000
	input := genCommand(lines, rate)
	for range b.N {
		h := startDetachedHost(b)
		var ours, tmux side
		interleave(rounds, func() {
			ours.lat = append(ours.lat, followedTurn(b, h, input)...)
		}, func() {
			tmux.lat = append(tmux.lat, tmuxControlTurn(b, input, lines)...)
		})
		if len(ours.lat) < lines || len(tmux.lat) < lines {
			b.Fatalf("lines timed: looprig %d, tmux %d (want %d a round)", len(ours.lat), len(tmux.lat), lines)
		}
		b.ReportMetric(ours.pct(0.50)/1e3, "ours-p50-ms")
		b.ReportMetric(ours.pct(0.99)/1e3, "ours-p99-ms")
		b.ReportMetric(tmux.pct(0.50)/1e3, "base-p50-ms")
		b.ReportMetric(tmux.pct(0.99)/1e3, "base-p99-ms")
		b.ReportMetric(ours.pct(0.99)/tmux.pct(0.99), "ratio")
	}
}

// detachedHost is a session live in a background host process.
type detachedHost struct {
	// store is the --store its commands take; rt the runtime directory
	// (XDG_RUNTIME_DIR), with the configuration and state homes in it
	// (config/, state/).
	store, rt string
	// storeKey is the directory store's canonical path, which names the
	// hosts' socket directory for host.Connect; empty on a NATS store,
	// whose local directory only the command derives.
	storeKey string
	id       string
}

// env is the environment its commands run with, for a shell command line.
func (h detachedHost) env() string {
	return fmt.Sprintf("XDG_RUNTIME_DIR=%q XDG_CONFIG_HOME=%q XDG_STATE_HOME=%q TERM=xterm-256color",
		h.rt, filepath.Join(h.rt, "config"), filepath.Join(h.rt, "state"))
}

// startDetachedHost starts one with the built command (`looprig new
// --detach`) on a new directory store, and stops it when the benchmark
// ends. This process's XDG_RUNTIME_DIR becomes the host's, so that it
// finds the socket.
func startDetachedHost(b *testing.B) detachedHost {
	return startDetachedHostOn(b, "")
}

// startDetachedHostOn is startDetachedHost on store: a NATS server's URL,
// or "" for a new directory store.
func startDetachedHostOn(b *testing.B, store string) detachedHost {
	b.Helper()
	bin := looprigBinary(b)
	rt := shortPrivateDir(b)
	b.Setenv("XDG_RUNTIME_DIR", rt)
	dirStore := store == ""
	if dirStore {
		store = filepath.Join(rt, "store")
	}
	looprig := func(args ...string) []byte {
		ctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--store", store}, args...)...)
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(rt, "config"), "XDG_STATE_HOME="+filepath.Join(rt, "state"))
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("looprig %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(looprig("new", "--scratch", "--detach", "--json"), &created); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { looprig("stop", created.ID) })
	h := detachedHost{store: store, rt: rt, id: created.ID}
	if dirStore {
		key, err := filepath.EvalSymlinks(store)
		if err != nil {
			b.Fatal(err)
		}
		h.storeKey = key
	}
	return h
}

// followedTurn runs input as a turn of h and follows it through a client
// of its host as a presenter does; it returns the lines' latencies.
func followedTurn(b *testing.B, h detachedHost, input string) []time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(bg, 5*time.Minute)
	defer cancel()
	c, err := host.Connect(ctx, h.storeKey, h.id, host.WithClientVersion("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		b.Fatal(err)
	}
	f, err := rig.Follow(ctx, c, st.Tip)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := c.Submit(ctx, input); err != nil {
		b.Fatal(err)
	}
	var tr rig.Transcript
	lc := &lineClock{}
	for {
		batch, err := f.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		at := time.Now()
		for _, env := range batch {
			if ch, ok := tr.Apply(env.Event); ok {
				lc.feed(ch.Text, at)
			}
			if _, ok := env.Event.(event.TurnDone); ok {
				return lc.lat
			}
		}
	}
}

// tmuxControlTurn runs input in a new tmux server's pane and reads it as a
// control-mode client; it returns the lines' latencies.
func tmuxControlTurn(b *testing.B, input string, lines int) []time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(bg, 5*time.Minute)
	defer cancel()
	tm := tmuxtest.New(b)
	defer tm.Kill()
	cmd := tm.Command(ctx, "-C", "new-session", "-x", "200", "-y", "50",
		"sh -c "+shQuote(input+"; sleep 30"))
	stdin, err := cmd.StdinPipe() // a control client ends when its input does
	if err != nil {
		b.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	lc := &lineClock{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "%output ")
		if !ok {
			continue
		}
		at := time.Now()
		if i := strings.IndexByte(rest, ' '); i >= 0 {
			text, err := unescapeControl(rest[i+1:])
			if err != nil {
				b.Fatal(err)
			}
			lc.feed(strings.ReplaceAll(text, "\r\n", "\n"), at)
		}
		if len(lc.lat) >= lines {
			return lc.lat
		}
	}
	b.Fatalf("tmux control mode ended after %d lines: %v", len(lc.lat), sc.Err())
	return nil
}

// unescapeControl undoes tmux control mode's escaping of %output data:
// bytes below space and the backslash are written as \ooo (octal).
func unescapeControl(s string) (string, error) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", errors.New("a truncated escape in %output")
		}
		n, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
		if err != nil {
			return "", fmt.Errorf("escape %q in %%output: %w", s[i:i+4], err)
		}
		b.WriteByte(byte(n))
		i += 3
	}
	return b.String(), nil
}
