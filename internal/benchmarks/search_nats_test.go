package benchmarks

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"looprig/natsstore"
	"looprig/natsstore/embedded"
)

// BenchmarkSearchNATS: `looprig search` on a NATS store (an embedded
// server, JetStream on this machine's disk) holding the search corpus
// (searchSize; generated through the store, then the generating process's
// connection closed), from the built command: the full rebuild
// (--reindex), a rare word and the regexp of BenchmarkSearch, and `looprig
// ls --json` in the same rounds (the command's start, its connection to
// the server and the listing every search does). The index lives in this
// machine's directory for the store (XDG_STATE_HOME), as a user's does.
//
// Metrics: rebuild-MBps (MB of records appended per second: frames and
// JetStream's own metadata not counted), word-p50-ms, word-p95-ms,
// re-p50-ms, re-p95-ms, ls-p50-ms.
func BenchmarkSearchNATS(b *testing.B) {
	bin := looprigBinary(b)
	sessions, lines := searchSize()
	srv, err := embedded.Start(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	st, err := natsstore.Open(bg, srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	c, err := GenerateSearchCorpusOn(bg, st, b.TempDir(), sessions, lines)
	st.Close()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("fixture on NATS: %d sessions × %d lines, %.1f MB of records, in %v", sessions, lines, float64(c.JournalBytes)/1e6, time.Since(t0).Round(time.Millisecond))
	home := b.TempDir()
	env := append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_STATE_HOME="+filepath.Join(home, "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"), "NO_COLOR=1")
	run := func(s *side, want int, args ...string) func() {
		return timedCommand(b, env, s, want, bin, append([]string{"--store", srv.URL()}, args...)...)
	}
	rounds := pick(7, 21)
	for range b.N {
		var rebuild, word, re, ls side
		run(&rebuild, 0, "search", "--reindex")()
		interleave(rounds,
			run(&word, c.Needles, "search", "eaddrinuse", "--kind", "output"),
			run(&re, 1, "search", `/\bdea[0-9a-f]{5} /`),
			run(&ls, 1, "ls", "--json"),
		)
		b.ReportMetric(float64(c.JournalBytes)/1e6/rebuild.lat[0].Seconds(), "rebuild-MBps")
		b.ReportMetric(word.pct(0.5)/1e3, "word-p50-ms")
		b.ReportMetric(word.pct(0.95)/1e3, "word-p95-ms")
		b.ReportMetric(re.pct(0.5)/1e3, "re-p50-ms")
		b.ReportMetric(re.pct(0.95)/1e3, "re-p95-ms")
		b.ReportMetric(ls.pct(0.5)/1e3, "ls-p50-ms")
	}
	if _, err := os.Stat(filepath.Join(home, "state", "looprig")); err != nil {
		b.Fatal(fmt.Errorf("the index is not in this machine's directory for the store: %w", err))
	}
}
