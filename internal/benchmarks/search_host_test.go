package benchmarks

import (
	"fmt"
	"testing"
	"time"

	"looprig/search"
)

// BenchmarkFloodTurnIndexing: what a host's indexing between turns costs
// a turn that floods output (target: ≤ 5% of its throughput), and how
// soon after a turn its lines are in the index (a search then reads
// nothing of the turn itself). A session in a host (the built command, a
// directory store) runs turns of `seq 1 N` through `looprig run`, the
// output streamed to the client and dropped. Each round times two turns:
// "after" begins once the host has indexed the turn before it (its last
// line is in the index: nothing indexes during it, the baseline); "into"
// begins the moment "after" ends, as the host begins indexing it, and
// stops that. Then the time from "into"'s end to its last line in the
// index. Medians.
func BenchmarkFloodTurnIndexing(b *testing.B) {
	c := newCLIBench(b, "")
	id, _, _ := c.newSession(b, "default")
	lines := pick(200_000, 2_000_000)
	st := openStore(b, c.store)
	defer st.Close()
	turn := 0
	flood := func() (ms float64, bytes int) {
		b.Helper()
		turn++
		start := time.Now()
		out := c.run(b, "run", id, "--", fmt.Sprintf("seq 1 %d; echo flood-turn-%d-done", lines, turn))
		return float64(time.Since(start).Microseconds()) / 1e3, len(out)
	}
	// indexed waits until the index holds turn's last line and returns
	// how long that took.
	indexed := func(turn int) float64 {
		b.Helper()
		q, err := search.ParseQuery(fmt.Sprintf(`"flood-turn-%d-done"`, turn))
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for time.Since(start) < 2*time.Minute {
			if ix, err := search.Open(bg, st, search.Options{Wait: 50 * time.Millisecond}); err == nil {
				n := 0
				err := ix.Search(bg, q, search.Filter{Kinds: []search.Kind{search.KindOutput}}, func(search.Hit) error { n++; return nil })
				ix.Close()
				if err != nil {
					b.Fatal(err)
				}
				if n > 0 {
					return float64(time.Since(start).Microseconds()) / 1e3
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		b.Fatalf("turn %d's last line not indexed after 2 minutes", turn)
		return 0
	}
	flood() // the host started, the shell warm
	indexed(turn)
	rounds := pick(2, 7)
	var afterMs, intoMs, lagMs []float64
	var size int
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			ms, n := flood()
			afterMs, size = append(afterMs, ms), n
			ms, _ = flood()
			intoMs = append(intoMs, ms)
			lagMs = append(lagMs, indexed(turn))
		}
	}
	mb := float64(size) / 1e6
	b.ReportMetric(mb/(medianOf(afterMs)/1e3), "turn-MB/s")
	b.ReportMetric(medianOf(afterMs), "after-ms")
	b.ReportMetric(medianOf(intoMs), "into-ms")
	b.ReportMetric(medianOf(intoMs)/medianOf(afterMs), "into/after")
	b.ReportMetric(medianOf(lagMs), "index-lag-ms")
	b.ReportMetric(mb/(medianOf(lagMs)/1e3), "index-MB/s")
}
