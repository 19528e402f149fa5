package tui

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestTmuxOpenedMidTurn: a turn prints 20 lines a second; ten TUIs are
// opened while it runs, each at another point of it (between checkpoints,
// on one, between a delta and its checkpoint); once it ended, each shows
// every line exactly once. Each TUI's terminal is tall enough to show the
// whole turn.
func TestTmuxOpenedMidTurn(t *testing.T) {
	looprig := binary(t)
	e := newTmux(t, looprig)
	cli := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(looprig, append([]string{"--store", e.store}, args...)...).Output()
		if err != nil {
			t.Fatalf("looprig %v: %v\n%s", args, err, out)
		}
		return out
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(cli("new", "--scratch", "--detach", "--json", "--title", "lines"), &created); err != nil {
		t.Fatal(err)
	}
	const lines = 300
	cli("run", created.ID, "--detach", "--", fmt.Sprintf("for i in $(seq %d); do echo line-$i; sleep 0.05; done", lines))

	const tuis = 10
	for i := range tuis {
		name := "tui" + strconv.Itoa(i)
		e.Run("new-session", "-d", "-s", name, "-x", "120", "-y", strconv.Itoa(lines+60), "sh", "-c", e.shellLine())
		time.Sleep(time.Duration(700+130*i%400) * time.Millisecond) // 0.7–1.1 s apart: the attach points differ from the checkpoints' period
	}
	cli("wait", created.ID, "--for", "turn-end", "--timeout", "60s")

	shown := regexp.MustCompile(`(?m)^[│┃].*[│┃]  line-(\d+) *[│┃]`)
	for i := range tuis {
		name := "tui" + strconv.Itoa(i)
		screen := e.WaitFor(name, 30*time.Second, "turn 0 done: exit 0")
		counts := map[int]int{}
		for _, m := range shown.FindAllStringSubmatch(screen, -1) {
			n, _ := strconv.Atoi(m[1])
			counts[n]++
		}
		for n := 1; n <= lines; n++ {
			if counts[n] != 1 {
				t.Errorf("%s: line-%d shown %d times; screen:\n%s", name, n, counts[n], screen)
				break
			}
		}
		if len(counts) != lines {
			t.Errorf("%s: %d distinct lines shown, want %d", name, len(counts), lines)
		}
	}
}
