package cli_test

import (
	"encoding/json"
	"io"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A turn prints 20 lines a second in a host; `attach` and `log -f --json`
// are started at several points while it runs. Once it ended and the
// session stopped, each attach printed every line from where it joined to
// the last exactly once, and each log every line exactly once.
func TestAttachAndLogFollowMidTurn(t *testing.T) {
	h := newHarness(t)
	id, _ := h.detached()
	const lines = 200
	h.must(0, "run", id, "--detach", "--", "for i in $(seq "+strconv.Itoa(lines)+"); do echo line-$i; sleep 0.05; done")
	// Each one's stdout is read while it runs; ended returns it, once the
	// process exited.
	type follower struct {
		p    *proc
		out  chan []byte
		seen *syncBuffer // what it printed so far
	}
	follow := func(args ...string) follower {
		f := follower{h.start(args...), make(chan []byte, 1), &syncBuffer{}}
		go func() {
			b, _ := io.ReadAll(io.TeeReader(f.p.out, f.seen))
			f.out <- b
		}()
		return f
	}
	ended := func(f follower, what string) []byte {
		t.Helper()
		select {
		case <-f.p.reap():
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not exit", what)
		}
		if f.p.waitErr != nil {
			t.Fatalf("%s: %v: %s", what, f.p.waitErr, f.p.stderr.String())
		}
		return <-f.out
	}
	var attaches, logs []follower
	for i := range 6 {
		attaches = append(attaches, follow("attach", id))
		logs = append(logs, follow("log", "-f", "--json", id))
		time.Sleep(time.Duration(900+170*i) * time.Millisecond)
	}
	h.must(0, "wait", id, "--for", "turn-end", "--timeout", "60s")
	h.must(0, "stop", id)

	printed := regexp.MustCompile(`(?m)^line-(\d+)$`)
	for i, f := range attaches {
		out := ended(f, "attach "+strconv.Itoa(i))
		var got []int
		for _, m := range printed.FindAllStringSubmatch(string(out), -1) {
			n, _ := strconv.Atoi(m[1])
			got = append(got, n)
		}
		if len(got) == 0 || got[len(got)-1] != lines {
			t.Fatalf("attach %d printed %v; want up to line-%d", i, got, lines)
		}
		for k := 1; k < len(got); k++ {
			if got[k] != got[k-1]+1 {
				t.Fatalf("attach %d: line-%d after line-%d (a line missing or twice):\n%s", i, got[k], got[k-1], out)
			}
		}
	}
	for i, f := range logs {
		f.seen.waitFor(t, `"type":"SessionStopped"`) // it followed to the end
		f.p.cmd.Process.Signal(syscall.SIGINT)
		out := ended(f, "log -f "+strconv.Itoa(i))
		var text strings.Builder
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var rec struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatalf("log -f %d: a line that is not a record: %q", i, l)
			}
			if rec.Type == "TurnOutput" {
				text.WriteString(rec.Text)
			}
		}
		var want strings.Builder
		for n := 1; n <= lines; n++ {
			want.WriteString("line-" + strconv.Itoa(n) + "\n")
		}
		if text.String() != want.String() {
			t.Fatalf("log -f %d: the turn's output\n%q\nwant every line once", i, text.String())
		}
	}
}
