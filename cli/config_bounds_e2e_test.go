package cli_test

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

	"looprig/internal/tomlscan/tomlscantest"
)

// maxConfigRSS is what `looprig ls` may take with any configuration file
// (docs: SECURITY.md, "Resource bounds").
const maxConfigRSS = 64 << 20

// Configuration files whose shape costs the TOML decoder gigabytes (40 KB
// of nested inline tables, a 200 KB dotted key; 40 KB and 1 MB of nesting
// behind each byte-order mark the decoder skips) are refused as any mistake
// in the file is, naming the file and the line (exit 1), and the largest
// the limits let through is decoded, by a process whose peak RSS stays
// under maxConfigRSS. The process runs with its address
// space capped at 4 GiB, so that a regression fails the test instead of
// the machine.
func TestHostileConfigShapes(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	peakrss := filepath.Join(dir, "peakrss")
	build := exec.Command("go", "build", "-o", peakrss, "./testdata/peakrss")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/peakrss: %v\n%s", err, out)
	}
	cases := []struct {
		name, doc, want string
	}{
		{"nested.toml", "# 40 KB\na = " + strings.Repeat("{ a = ", 40<<10/7) + "1" + strings.Repeat("}", 40<<10/7) + "\n", ":2: values nested deeper than 8 levels"},
		{"dotted.toml", "# 200 KB\n" + strings.Repeat("a.", 100<<10) + "a = 1\n", ":2: a key of more than 8 dotted parts"},
		// The most the limits let through, near the 1 MiB a file may be:
		// decoded, then refused for what it says.
		{"within.toml", withinLimits(), ":1: profiles.p0.abcdefghij: unknown key"},
	}
	// The same shapes, of 40 KB and 1 MB, behind each byte-order mark the
	// decoder skips (one once hid the rest of the file from the check).
	for _, m := range tomlscantest.Marks()[1:] {
		for _, size := range []int{40 << 10, 1_000_000} {
			nested := tomlscantest.Shapes(size)[0] // nested inline tables
			cases = append(cases, struct{ name, doc, want string }{
				strings.ReplaceAll(fmt.Sprintf("%s-%d.toml", m.Name, size), " ", "-"),
				string(tomlscantest.Doc(m.Bytes, "# hostile\n", nested.Body)),
				":2: values nested deeper than 8 levels",
			})
		}
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.doc), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := h.command(ctx, "--config", path, "ls")
		// peakrss measures: this process's own peak would count in a
		// child's figure (testdata/peakrss says why).
		report := filepath.Join(dir, c.name+".rss")
		cmd.Args = append([]string{peakrss, report, "/bin/sh", "-c", `ulimit -v 4194304; exec "$0" "$@"`}, cmd.Args...)
		cmd.Path = peakrss
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		cancel()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		reported, rerr := os.ReadFile(report)
		rss, perr := strconv.ParseInt(string(reported), 10, 64)
		if rerr != nil || perr != nil {
			t.Fatalf("looprig --config %s ls: no peak RSS reported (%v, %v); stderr: %s", c.name, rerr, perr, stderr.String())
		}
		t.Logf("%s (%d bytes): exit %d in %v, peak RSS %.1f MB: %s", c.name, len(c.doc), code, took.Round(time.Millisecond), float64(rss)/1e6, strings.TrimSpace(stderr.String()))
		if code != 1 || !strings.Contains(stderr.String(), path+c.want) {
			t.Errorf("looprig --config %s ls: exit %d, %q; want exit 1 and %q", c.name, code, stderr.String(), path+c.want)
		}
		if rss > maxConfigRSS {
			t.Errorf("looprig --config %s ls: peak RSS %d bytes, over %d", c.name, rss, maxConfigRSS)
		}
	}
}

// withinLimits is a configuration file of 2,000 keys of 8 parts: as many
// keys, as long, as the limits on a file's shape let through.
func withinLimits() string {
	var b strings.Builder
	for i := range 2_000 {
		fmt.Fprintf(&b, "profiles.p%d.%sk = %d\n", i, strings.Repeat("abcdefghij.", 5), i)
	}
	return b.String()
}
