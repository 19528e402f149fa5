package benchmarks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/host"
	"looprig/internal/agenttest"
	"looprig/rig/event"
)

// agentBench is a store whose profile "agent" runs the real Claude Code
// CLI against a scripted model on loopback, and the environment both
// looprig and the CLI run with.
type agentBench struct {
	bin, claude, store, runtime, home string
	env                               []string
	model                             *agenttest.Server
}

func newAgentBench(b *testing.B, script agenttest.Script, allow string) *agentBench {
	b.Helper()
	claude := agenttest.Claude(b)
	rt := shortPrivateDir(b)
	a := &agentBench{bin: looprigBinary(b), claude: claude, store: filepath.Join(rt, "store"), runtime: rt, home: filepath.Join(rt, "home")}
	a.model = agenttest.NewServer(b, script)
	conf := filepath.Join(rt, "config", "looprig")
	if err := os.MkdirAll(conf, 0o700); err != nil {
		b.Fatal(err)
	}
	profile := fmt.Sprintf("[profiles.agent]\nengine = \"claude\"\nagent_command = %q\nagent_allow = [%s]\n", claude, allow)
	if err := os.WriteFile(filepath.Join(conf, "config.toml"), []byte(profile), 0o600); err != nil {
		b.Fatal(err)
	}
	a.env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "XDG_CONFIG_HOME="+filepath.Join(rt, "config"),
		"XDG_STATE_HOME="+filepath.Join(rt, "state"), "XDG_DATA_HOME="+filepath.Join(rt, "data"))
	a.env = append(a.env, agenttest.Env(a.model, a.home)...)
	return a
}

func (a *agentBench) looprig(b *testing.B, args ...string) []byte {
	b.Helper()
	ctx, cancel := context.WithTimeout(bg, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.bin, append([]string{"--store", a.store}, args...)...)
	cmd.Env = a.env
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		b.Fatalf("looprig %v: %v\n%s\n%s", args, err, out, stderr)
	}
	return out
}

// newSession creates a session of profile agent live in a host, stopped at
// the end of the benchmark; it returns its id and workspace.
func (a *agentBench) newSession(b *testing.B) (id, workspace string) {
	var v struct {
		ID        string `json:"id"`
		Workspace string `json:"workspace"`
	}
	if err := json.Unmarshal(a.looprig(b, "new", "--rig", "agent", "--scratch", "--detach", "--json"), &v); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd := exec.Command(a.bin, "--store", a.store, "stop", v.ID)
		cmd.Env = a.env
		_ = cmd.Run()
	})
	return v.ID, v.Workspace
}

// claudeDirect runs one turn of conversation id in dir with the CLI
// itself, as looprig's engine does (the same flags but the hooks).
func (a *agentBench) claudeDirect(b *testing.B, dir, id string, resume bool, prompt string) {
	b.Helper()
	pin := "--session-id"
	if resume {
		pin = "--resume"
	}
	ctx, cancel := context.WithTimeout(bg, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.claude, "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", pin, id)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, a.env, strings.NewReader(prompt)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `"is_error":false`) {
		b.Fatalf("claude: %v\n%s", err, out)
	}
}

// BenchmarkAgentTurn: one turn of a Claude Code session through looprig
// (`looprig run ID -- PROMPT`: the command, the host, the journal, the
// agent's hooks, the workspace checkpoint and the transcript stored at
// the turn's end) against `claude -p` run directly with the same flags,
// in a directory of its own, on the same scripted model. Both sides run
// their conversations turn after turn, in alternation, 10 turns each (5
// with -short). Target (issue 26): what looprig adds, the median of ours
// less the median of the CLI's, ≤ 50 ms.
func BenchmarkAgentTurn(b *testing.B) {
	a := newAgentBench(b, func(agenttest.Request) agenttest.Reply { return agenttest.Reply{Text: "ok, noted."} }, "")
	id, _ := a.newSession(b)
	direct, convID := b.TempDir(), uuid.NewString()
	// The first turn of each starts its conversation: not timed.
	a.looprig(b, "run", id, "--", "hello")
	a.claudeDirect(b, direct, convID, false, "hello")
	var ours, base []time.Duration
	n := 0
	for b.Loop() {
		interleave(pick(5, 10),
			func() {
				n++
				start := time.Now()
				a.looprig(b, "run", id, "--", fmt.Sprintf("turn %d", n))
				ours = append(ours, time.Since(start))
			},
			func() {
				start := time.Now()
				a.claudeDirect(b, direct, convID, true, fmt.Sprintf("turn %d", n))
				base = append(base, time.Since(start))
			})
	}
	o, c := median(ours), median(base)
	b.ReportMetric(ms(o), "ours-ms")
	b.ReportMetric(ms(c), "base-ms")
	b.ReportMetric(ms(o-c), "added-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAgentGate: the round trip of a tool call's gate. The scripted
// model makes the agent call Bash 60 times in one turn (20 with -short),
// one call after the other; a client of the session's host answers each
// GateOpened with approve at once (a script answering). Against the same
// turn where agent_allow lets the calls run without a gate (the hook still
// runs: the baseline has the same processes). A call's time is between the
// request carrying the tool call's answer and the one carrying its result,
// as the model server sees them. Target (issue 26): the gate's p99 ≤ 100
// ms over the allowed call's.
func BenchmarkAgentGate(b *testing.B) {
	calls := pick(20, 60)
	var sides [2]struct {
		name string
		lat  []time.Duration
	}
	sides[0].name, sides[1].name = "gated", "allowed"
	for i, allow := range []string{"", `"Bash(echo call*)"`} {
		var mu sync.Mutex
		var arrived []time.Time
		script := func(req agenttest.Request) agenttest.Reply {
			mu.Lock()
			arrived = append(arrived, time.Now())
			k := len(arrived)
			mu.Unlock()
			if k > calls {
				return agenttest.Reply{Text: "done"}
			}
			return agenttest.Reply{ToolID: fmt.Sprintf("toolu_%d", k), ToolName: "Bash", ToolInput: map[string]any{"command": fmt.Sprintf("echo call %d", k)}}
		}
		a := newAgentBench(b, script, allow)
		id, _ := a.newSession(b)
		stop := a.answerGates(b, id)
		for range b.N {
			mu.Lock()
			arrived = nil
			mu.Unlock()
			a.looprig(b, "run", id, "--", "call the tool")
			mu.Lock()
			for k := 1; k < len(arrived); k++ {
				sides[i].lat = append(sides[i].lat, arrived[k].Sub(arrived[k-1]))
			}
			mu.Unlock()
		}
		stop()
	}
	gated, allowed := sides[0].lat, sides[1].lat
	b.ReportMetric(ms(quantile(gated, 0.5)), "gated-p50-ms")
	b.ReportMetric(ms(quantile(gated, 0.99)), "gated-p99-ms")
	b.ReportMetric(ms(quantile(allowed, 0.5)), "allowed-p50-ms")
	b.ReportMetric(ms(quantile(allowed, 0.99)), "allowed-p99-ms")
	b.ReportMetric(ms(quantile(gated, 0.5)-quantile(allowed, 0.5)), "gate-p50-added-ms")
	b.ReportMetric(ms(quantile(gated, 0.99)-quantile(allowed, 0.99)), "gate-p99-added-ms")
	b.ReportMetric(0, "ns/op")
}

// answerGates approves every gate session id opens, from a client of its
// host, until stop.
func (a *agentBench) answerGates(b *testing.B, id string) (stop func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(bg)
	key, err := filepath.EvalSymlinks(a.store)
	if err != nil {
		b.Fatal(err)
	}
	cl, err := host.Dial(ctx, filepath.Join(a.runtime, "looprig", host.StoreHash(key), id+".sock"))
	if err != nil {
		b.Fatal(err)
	}
	st, err := cl.Subscribe(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			env, err := st.Next(ctx)
			if err != nil {
				return
			}
			if g, ok := env.Event.(event.GateOpened); ok {
				_ = cl.RespondGate(ctx, g.GateID, true, "bench")
			}
		}
	}()
	return func() {
		cancel()
		cl.Close()
		<-done
	}
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
