package tui

import (
	"io"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"looprig/host"
	"looprig/internal/termrender"
	"looprig/rig"
	"looprig/rig/event"
)

// benchModel is a 200×60 model with 10k sessions listed, the selected one
// attached with 10k event lines in its ring (the running turn's last ones
// pending).
func benchModel(b testing.TB) Model {
	m := fakeModel(b, 200, 60, colorRenderer())
	m = withManySessions(m, 10_000)
	id := fakeID(1)
	m.send(attachedMsg{id: id, c: &host.Client{}, pid: 4242, status: host.Status{Title: "bench", Epoch: 1, Placement: string(rig.PlacementSession)}})
	v := m.sessions[id]
	var sb strings.Builder
	for i := 0; i < 10_000; i++ {
		sb.WriteString("line ")
		sb.WriteString(strconv.Itoa(i))
		sb.WriteString(" of the benchmark output, long enough to be realistic: lorem ipsum dolor sit amet\n")
	}
	envs := []event.Envelope{
		{Seq: 1, At: fixedNow, Event: event.SessionStarted{Title: "bench", Rig: "default", Placement: "session"}},
		{Seq: 2, At: fixedNow, Event: event.TurnStarted{TurnID: "t", Index: 0, Input: "seq 10000"}},
		{Seq: 3, At: fixedNow, Event: event.TurnOutput{TurnID: "t", Text: sb.String()}},
	}
	m.send(subscribedMsg{id: id, gen: v.live.gen, c: v.live.c, follower: &rig.Follower{}})
	m.send(streamMsg{id: id, gen: v.live.gen, envs: envs})
	m.list.selectID(id, m.listSpace())
	m.send(flashOffMsg{gen: m.status.gen})
	// the turn runs: its last lines are pending (output.go)
	if n := v.transcript.ring.len() + len(v.transcript.pending()); n < ringCapacity {
		b.Fatalf("ring and pending hold %d lines, want %d", n, ringCapacity)
	}
	return m
}

// BenchmarkView: one frame at 200×60 with 10k sessions and 10k event
// lines (the frame budget of docs/ARCHITECTURE.md, "Performance figures":
// ≤ 2 ms).
func BenchmarkView(b *testing.B) {
	m := benchModel(b)
	checkFrame(b, m.View(), 200, 60)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = m.View()
	}
}

// BenchmarkViewScrolled is the same frame scrolled to the middle of the
// list with the events pane focused and scrolled back.
func BenchmarkViewScrolled(b *testing.B) {
	m := benchModel(b)
	for i := 0; i < 5000; i++ {
		m.update(keyMsg("j"))
	}
	m.keys("enter", "up", "up", "up")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = m.View()
	}
}

// BenchmarkFoldOutput: the reducer alone, fed 32 KiB output deltas of
// short lines (what the shell engine delivers for `seq`), plain and
// coloured, with the turn output rendered for truecolor.
func BenchmarkFoldOutput(b *testing.B) {
	for _, c := range []struct {
		name string
		line func(i int) string
	}{
		{"plain", func(i int) string { return strconv.Itoa(1_000_000+i) + "\n" }},
		{"colour", func(i int) string {
			return "\x1b[1;3" + strconv.Itoa(i%8) + "m" + strconv.Itoa(1_000_000+i) + "\x1b[0m plain \x1b[38;5;" + strconv.Itoa(i%256) + "mx\x1b[0m\n"
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var sb strings.Builder
			for i := 0; sb.Len() < 32<<10; i++ {
				sb.WriteString(c.line(i))
			}
			chunk := sb.String()
			lines := strings.Count(chunk, "\n")
			v := newSessView("bench")
			v.transcript.prof = termrender.TrueColor
			v.transcript.apply(event.Envelope{Seq: 1, Event: event.TurnStarted{TurnID: "t"}})
			b.SetBytes(int64(len(chunk)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v.transcript.apply(event.Envelope{Event: event.OutputDelta{TurnID: "t", Stream: "stdout", Offset: int64(i * len(chunk)), Text: chunk}})
			}
			b.ReportMetric(float64(lines*b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

// BenchmarkEventPath2M runs a real turn printing 2 M lines (`seq 2000000`,
// shell engine, memstore) in a session the real program is attached to (its
// host served by this process, on a unix socket), and
// measures what the UI absorbs: lines/s, messages folded, frames (View
// calls), bytes written to the terminal
// (written-MB), the live heap's peak above where it started (peak-heap-MB,
// sampled at every key), and how long a key waits for the program while the
// flood lasts (p50/p99/max, the key-to-frame bound of docs/ARCHITECTURE.md,
// "Performance figures": p99 ≤ 100 ms). Run with -benchtime=1x.
func BenchmarkEventPath2M(b *testing.B) {
	for _, c := range []struct{ name, cmd string }{
		// bulk: seq writes 4 KiB blocks, the engine reads 32 KiB chunks
		{"seq", "seq 2000000"},
		// line by line: one write per line, the worst case for the hub
		{"flushed", `awk 'BEGIN{for(i=0;i<2000000;i++){print i; fflush()}}'`},
		// coloured: every line has SGR colours (what ls --color, compilers
		// and test runners print under the pty), bulk writes
		{"colour", `awk 'BEGIN{for(i=0;i<2000000;i++) printf "\033[1;3%dm%d\033[0m plain \033[38;5;%dmx\033[0m\n", i%8, i, i%256}'`},
		// a full-screen program's screen flooded: the lines scroll its
		// virtual terminal (screen.go), not the transcript
		{"screen", `printf '\033[?1049h'; seq 2000000; printf '\033[?1049l'`},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				eventPath2M(b, c.cmd)
			}
		})
	}
}

func eventPath2M(b *testing.B, input string) {
	st := memstoreNew()
	opts := flowOptions(b, st)
	m := newModel(opts, colorRenderer())
	var frames, msgs atomic.Int64
	h := &countingHarness{harness: harness{m}, frames: &frames, msgs: &msgs}
	tm := teatest.NewTestModel(b, h, teatest.WithInitialTermSize(200, 60))
	var written atomic.Int64
	stopCount := make(chan struct{})
	go countOutput(tm.Output(), &written, stopCount)
	defer close(stopCount)
	defer func() {
		tm.Send(tea.QuitMsg{})
		m.h.cancel()
		m.h.closeAll(10 * time.Second)
	}()
	wait := func(cond func(m Model) bool) {
		deadline := time.Now().Add(120 * time.Second)
		for time.Now().Before(deadline) {
			ok := false
			done := make(chan struct{})
			tm.Send(probeMsg{fn: func(m Model) { ok = cond(m); close(done) }})
			<-done
			if ok {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		b.Fatal("timed out")
	}
	wait(func(m Model) bool { return m.list.listed })
	tm.Type("n")
	tm.Send(keyMsg("enter"))
	var id string
	wait(func(m Model) bool {
		v := m.list.selected()
		if v != nil && v.attached() && !v.replaying() && v.live.follower != nil {
			id = v.id
			return true
		}
		return false
	})
	tm.Type("i")
	tm.Type(input)
	frames.Store(0)
	msgs.Store(0)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap0, peak := ms.HeapAlloc, ms.HeapAlloc
	time.Sleep(50 * time.Millisecond) // let the output so far be counted
	written.Store(0)
	start := time.Now()
	tm.Send(keyMsg("enter"))
	var lat []time.Duration
	var lines uint64
	for {
		sent := time.Now()
		done := make(chan struct{})
		var finished bool
		tm.Send(probeMsg{fn: func(m Model) {
			v := m.sessions[id]
			lines = v.transcript.outLines
			finished = v.transcript.fold.Turns > 0 && v.transcript.fold.Turn() == nil && strings.Contains(m.View(), "turn 0 done")
			close(done)
		}})
		<-done
		lat = append(lat, time.Since(sent))
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
		if finished {
			break
		}
		if time.Since(start) > 120*time.Second {
			b.Fatal("the turn did not finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
	el := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	if lines < 2_000_000 {
		b.Logf("absorbed %d lines", lines)
	}
	b.ReportMetric(float64(lines)/el.Seconds(), "lines/s")
	b.ReportMetric(float64(lines), "lines")
	b.ReportMetric(float64(msgs.Load()), "msgs")
	b.ReportMetric(float64(frames.Load()), "frames")
	b.ReportMetric(float64(pct(0.5).Microseconds())/1000, "p50-key-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-key-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-key-ms")
	b.ReportMetric(el.Seconds(), "turn-s")
	b.ReportMetric(float64(written.Load())/(1<<20), "written-MB")
	b.ReportMetric(float64(peak-min(heap0, peak))/(1<<20), "peak-heap-MB")
}

// countOutput counts the bytes the program writes to its terminal.
func countOutput(r io.Reader, n *atomic.Int64, stop <-chan struct{}) {
	buf := make([]byte, 64<<10)
	for {
		k, _ := r.Read(buf)
		n.Add(int64(k))
		if k == 0 {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}
}

type countingHarness struct {
	harness
	frames, msgs *atomic.Int64
}

func (h *countingHarness) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	h.msgs.Add(1)
	nm, cmd := h.harness.Update(msg)
	h.harness = nm.(harness)
	return h, cmd
}

func (h *countingHarness) View() string {
	h.frames.Add(1)
	return h.harness.View()
}

// BenchmarkListing10k folds a listing of 10k sessions (what every refresh
// costs Update) and draws the first frame after it.
func BenchmarkListing10k(b *testing.B) {
	m := fakeModel(b, 200, 60, colorRenderer())
	m = withManySessions(m, 10_000)
	infos := make([]rig.SessionInfo, 0, len(m.list.rows))
	for _, v := range m.list.rows {
		infos = append(infos, v.listing.info)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.update(listMsg{infos: infos})
		_ = m.View()
	}
}
