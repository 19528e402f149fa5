package benchmarks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The checkpoint figures of the command, end to end: the built looprig,
// its hosts, a directory store.

// cliBench runs the built looprig against one store with a private
// runtime and configuration.
type cliBench struct {
	bin, store string
	env        []string
}

func newCLIBench(b *testing.B, config string) *cliBench {
	b.Helper()
	rt := shortPrivateDir(b)
	c := &cliBench{bin: looprigBinary(b), store: filepath.Join(rt, "store")}
	conf := filepath.Join(rt, "config", "looprig")
	if err := os.MkdirAll(conf, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "config.toml"), []byte(config), 0o600); err != nil {
		b.Fatal(err)
	}
	c.env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "XDG_CONFIG_HOME="+filepath.Join(rt, "config"),
		"XDG_STATE_HOME="+filepath.Join(rt, "state"), "HOME="+filepath.Join(rt, "home"))
	return c
}

func (c *cliBench) run(b *testing.B, args ...string) []byte {
	b.Helper()
	ctx, cancel := context.WithTimeout(bg, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"--store", c.store}, args...)...)
	cmd.Env = c.env
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

// newSession makes a session of profile live in a host, stopped when
// the benchmark ends; it returns its id, workspace and host pid.
func (c *cliBench) newSession(b *testing.B, profile string) (string, string, int) {
	b.Helper()
	var v struct {
		ID        string `json:"id"`
		Workspace string `json:"workspace"`
		PID       int    `json:"pid"`
	}
	if err := json.Unmarshal(c.run(b, "new", "--rig", profile, "--scratch", "--detach", "--json"), &v); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd := exec.Command(c.bin, "--store", c.store, "stop", v.ID)
		cmd.Env = c.env
		_ = cmd.Run()
	})
	return v.ID, v.Workspace, v.PID
}

// fillTree writes ckptFiles files of ckptFileSize into dir, backdated.
func fillTree(b *testing.B, dir string) {
	b.Helper()
	buf := make([]byte, ckptFileSize)
	old := time.Now().Add(-time.Hour)
	for i := 0; i < ckptFiles; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%02d", i%100))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for k := range buf {
			buf[k] = byte(i + k)
		}
		p := filepath.Join(d, fmt.Sprintf("f%05d.dat", i))
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpointRunTrue: `looprig run ID -- true` end to end, run
// after run as a user or a script runs them (a run returns at the turn's
// end; the next one waits for the checkpoint before its turn starts), in a
// session whose workspace holds the 10k tree and checkpoints at every
// turn's end, against the same in a session with checkpoints off. The two
// alternate in blocks of runs, each block ending (untimed) once its
// session is idle, so that no checkpoint runs beside the other side.
func BenchmarkCheckpointRunTrue(b *testing.B) {
	c := newCLIBench(b, "[profiles.on]\ncheckpoint = \"turn\"\n[profiles.off]\ncheckpoint = \"off\"\n")
	on, wsOn, _ := c.newSession(b, "on")
	off, wsOff, _ := c.newSession(b, "off")
	fillTree(b, wsOn)
	fillTree(b, wsOff)
	c.run(b, "run", on, "--", "true") // the first checkpoint of the tree
	c.run(b, "run", off, "--", "true")
	const block = 5
	rounds := pick(2, 6)
	var sOn, sOff side
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			for _, x := range []struct {
				s  *side
				id string
			}{{&sOn, on}, {&sOff, off}} {
				c.run(b, "wait", x.id, "--for", "idle")
				start := time.Now()
				for k := 0; k < block; k++ {
					c.run(b, "run", x.id, "--", "true")
				}
				c.run(b, "wait", x.id, "--for", "idle") // the last checkpoint, in the block's time
				x.s.add(block, time.Since(start))
			}
		}
	}
	b.ReportMetric(msOf(&sOn), "on-ms")
	b.ReportMetric(msOf(&sOff), "off-ms")
	b.ReportMetric(msOf(&sOn)/msOf(&sOff), "on/off")
}

// BenchmarkCheckpointMemory: the peak memory of a host above its idle
// size while it takes the first checkpoint of a 100 MB workspace holding
// one 64 MiB file (VmHWM against VmRSS, from /proc). Target: ≤ 64 MiB.
func BenchmarkCheckpointMemory(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("no /proc here")
	}
	c := newCLIBench(b, "[profiles.on]\ncheckpoint = \"turn\"\n")
	var above []float64
	for i := 0; i < b.N; i++ {
		id, ws, pid := c.newSession(b, "on")
		if err := os.WriteFile(filepath.Join(ws, "big.bin"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
		// The peak so far is the host's start's: count from now.
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			b.Skipf("cannot reset the host's peak RSS: %v", err)
		}
		idle := procKB(b, pid, "VmRSS")
		c.run(b, "run", id, "--", "head -c 67108864 /dev/urandom > big.bin && mkdir -p small && for i in $(seq 1 360); do head -c 100000 /dev/urandom > small/f$i; done")
		c.run(b, "wait", id, "--for", "idle")
		peak := procKB(b, pid, "VmHWM")
		above = append(above, float64(peak-idle)/1024)
		c.run(b, "stop", id)
	}
	b.ReportMetric(medianOf(above), "peak-above-idle-MiB")
}

// procKB reads a "Name: N kB" line of /proc/PID/status.
func procKB(b *testing.B, pid int, name string) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/status", name, pid)
	return 0
}

// medianOf is the median of xs.
func medianOf(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	slices.Sort(s)
	return s[len(s)/2]
}
