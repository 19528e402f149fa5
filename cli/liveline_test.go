package cli

import (
	"bytes"
	"strings"
	"testing"

	"looprig/internal/termrender"
)

// liveTerm is a terminal the live line draws on: what it is sent, in
// order (the live line's output, looprig's messages, the echo of what the
// user types), drawn by a virtual terminal.
type liveTerm struct {
	cols int
	out  bytes.Buffer
}

func (lt *liveTerm) Write(p []byte) (int, error) { return lt.out.Write(p) }

// screen is what the terminal shows, rows right-trimmed, the empty rows
// at the bottom left out. "\n" is sent as "\r\n", as a terminal's output
// processing (ONLCR) does.
func (lt *liveTerm) screen(t *testing.T) []string {
	t.Helper()
	emu := termrender.NewScreen(lt.cols, 40)
	emu.Write(bytes.ReplaceAll(lt.out.Bytes(), []byte("\n"), []byte("\r\n")))
	rows := strings.Split(emu.String(), "\n")
	for i := range rows {
		rows[i] = strings.TrimRight(rows[i], " ")
	}
	for len(rows) > 0 && rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1]
	}
	return rows
}

func newTestLive(cols int) (*liveLine, *liveTerm) {
	lt := &liveTerm{cols: cols}
	return &liveLine{w: lt, cols: func() int { return cols }}, lt
}

// The live line, step by step, on a virtual terminal: every line the
// output made is on the screen once, in place, whatever came between.
func TestLiveLine(t *testing.T) {
	type step func(l *liveLine, lt *liveTerm)
	upd := func(pending string, finals ...string) step {
		return func(l *liveLine, _ *liveTerm) { l.update(finals, pending) }
	}
	// typed: the user types text and Enter; our terminal echoes it.
	typed := func(text string) step {
		return func(l *liveLine, lt *liveTerm) { lt.out.WriteString(text + "\n"); l.typedLine(text) }
	}
	note := func(msg string) step {
		return func(l *liveLine, lt *liveTerm) { l.aside(lt, []byte(msg)) }
	}
	answer := func(text string) step { // a gate's question answered here
		return func(l *liveLine, lt *liveTerm) { lt.out.WriteString(text + "\n"); l.resume(true) }
	}
	resumed := func(l *liveLine, _ *liveTerm) { l.resume(false) } // answered elsewhere
	end := func(open bool, lines ...string) step {
		return func(l *liveLine, lt *liveTerm) {
			if left, _ := l.end(lines, open); left {
				lt.out.WriteString("\n") // run ends it on stderr
			}
		}
	}
	for _, tt := range []struct {
		name  string
		cols  int
		steps []step
		want  []string
		// shownAt: after step i, the screen's last row is want (the
		// prompt is on the screen before it is answered).
		shownAt map[int]string
		// noRedraw: nothing is drawn twice (a line that grows is only
		// added to).
		noRedraw bool
	}{
		{name: "a prompt, answered", steps: []step{
			upd("name? "), typed("bob"), upd("name? b"), upd("name? bob"), upd("", "name? bob"), upd("", "hi bob"),
		}, want: []string{"name? bob", "hi bob"}, shownAt: map[int]string{0: "name?"}},
		{name: "an answer echoed in one piece", steps: []step{
			upd("name? "), typed("bob"), upd("", "name? bob", "hi bob"),
		}, want: []string{"name? bob", "hi bob"}},
		{name: "input without a prompt", steps: []step{
			typed("bob"), upd("", "bob"), upd("", "got bob"),
		}, want: []string{"bob", "got bob"}},
		{name: "lines typed ahead", steps: []step{
			upd("a? "), typed("1"), typed("2"), upd("", "a? 1"), upd("b? 2"), upd("", "b? 2"), upd("", "done"),
		}, want: []string{"a? 1", "2", "b? 2", "done"}},
		{name: "an echo that does not come (a password read)", steps: []step{
			upd("pw: "), typed("secret"), upd("", "pw: "), upd("", "len 6"),
		}, want: []string{"pw: secret", "pw:", "len 6"}},
		{name: "a line that grows", steps: []step{
			upd("abc"), upd("abcdef"), upd("", "abcdefgh"),
		}, want: []string{"abcdefgh"}, shownAt: map[int]string{0: "abc", 1: "abcdef"}, noRedraw: true},
		{name: "a progress bar", steps: []step{
			upd("10%"), upd("50%"), upd("", "100%"), upd("", "done"),
		}, want: []string{"100%", "done"}, shownAt: map[int]string{1: "50%"}},
		{name: "a line erased", steps: []step{
			upd("working"), upd(""), upd("", "done"),
		}, want: []string{"done"}},
		{name: "colours", steps: []step{
			upd("\x1b[31mred\x1b[0m"), upd("", "\x1b[31mred\x1b[0m plain"),
		}, want: []string{"red plain"}},
		{name: "a note between", steps: []step{
			upd("name? "), note("looprig: a note\n"), upd("name? x"), upd("", "name? xy"),
		}, want: []string{"looprig: a note", "name? xy"}, shownAt: map[int]string{1: "name?"}},
		{name: "a question answered here", steps: []step{
			upd("name? "), note("looprig: gate: go?\napprove? [y/N] "), upd("name? more"), answer("y"), upd("", "name? more!"),
		}, want: []string{"looprig: gate: go?", "approve? [y/N] y", "name? more!"}, shownAt: map[int]string{2: "approve? [y/N]", 3: "name? more"}},
		{name: "a question answered elsewhere", steps: []step{
			upd("name? "), note("looprig: gate: go?\napprove? [y/N] "), resumed, upd("", "name? x"),
		}, want: []string{"looprig: gate: go?", "approve? [y/N]", "name? x"}},
		{name: "a line wider than the terminal", cols: 10, steps: []step{
			upd(strings.Repeat("a", 25)), upd(strings.Repeat("b", 23)), upd("", strings.Repeat("c", 12)), upd("", "next"),
		}, want: []string{"cccccccccc", "cc", "next"}},
		{name: "exactly as wide as the terminal", cols: 10, steps: []step{
			upd(strings.Repeat("a", 10)), upd("", "b"), upd("", "next"),
		}, want: []string{"b", "next"}},
		{name: "the end, the last line open", steps: []step{
			upd("tail"), end(true, "tail more"),
		}, want: []string{"tail more"}},
		{name: "the end, after the echo of a line typed", steps: []step{
			upd("name? "), typed("bob"), end(true, "name? bob"),
		}, want: []string{"name? bob"}},
		{name: "the end, lines at once", steps: []step{
			upd("one"), end(false, "one", "two"), upd("", "next turn"),
		}, want: []string{"one", "two", "next turn"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cols := tt.cols
			if cols == 0 {
				cols = 80
			}
			l, lt := newTestLive(cols)
			for i, s := range tt.steps {
				s(l, lt)
				if want, ok := tt.shownAt[i]; ok {
					if rows := lt.screen(t); len(rows) == 0 || rows[len(rows)-1] != want {
						t.Fatalf("after step %d the screen is %q, want its last row %q", i, rows, want)
					}
				}
			}
			if tt.noRedraw && strings.Contains(lt.out.String(), "\r") {
				t.Errorf("a line was drawn again: %q", lt.out.String())
			}
			if got := lt.screen(t); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("screen:\n%q\nwant:\n%q\nsent: %q", got, tt.want, lt.out.String())
			}
		})
	}
}
