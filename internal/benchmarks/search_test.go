package benchmarks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/storage"
	"looprig/search"
)

// searchFixture is the generated store the search benchmark runs on
// (GenerateSearchCorpus).
type searchFixture struct {
	dir          string
	ids          []uuid.UUID
	journalBytes int64
	lines        int
	needles      int // lines holding "eaddrinuse"
}

// searchSize is the fixture's size: LOOPRIG_SEARCH_SESSIONS and
// LOOPRIG_SEARCH_LINES (per session) override the default of 100 × 10,000
// (-short: 20 × 10,000).
func searchSize() (sessions, lines int) {
	sessions, lines = pick(20, 100), 10_000
	if n, err := strconv.Atoi(os.Getenv("LOOPRIG_SEARCH_SESSIONS")); err == nil && n > 0 {
		sessions = n
	}
	if n, err := strconv.Atoi(os.Getenv("LOOPRIG_SEARCH_LINES")); err == nil && n > 0 {
		lines = n
	}
	return sessions, lines
}

var searchFixtures = map[string]*searchFixture{}

func newSearchFixture(b *testing.B, sessions, lines int) *searchFixture {
	b.Helper()
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	key := fmt.Sprint(sessions, "x", lines)
	if fx := searchFixtures[key]; fx != nil {
		return fx
	}
	root, err := fixtureRoot()
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(root, "search-"+key)
	os.RemoveAll(dir)
	t0 := time.Now()
	// In a process of its own that then exits (corpusChildEnv).
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", corpusChildEnv, dir, sessions, lines))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("generate the search corpus: %v", err)
	}
	var c SearchCorpus
	if err := json.Unmarshal(out, &c); err != nil {
		b.Fatalf("generate the search corpus: %v: %q", err, out)
	}
	fx := &searchFixture{dir: c.Dir, ids: c.IDs, journalBytes: c.JournalBytes, lines: c.Lines, needles: c.Needles}
	b.Logf("fixture: %d sessions × %d lines, %.1f MB of journals, in %v", sessions, lines, float64(fx.journalBytes)/1e6, time.Since(t0).Round(time.Millisecond))
	searchFixtures[key] = fx
	return fx
}

func dirBytes(tb testing.TB, dir string) int64 {
	n, err := treeBytes(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// searchInProcess opens the fixture's index, lists its sessions (or takes
// the index's kept listing), brings it up to date and searches q, as the
// command does, and returns how long it took.
func searchInProcess(b *testing.B, fx *searchFixture, q string) time.Duration {
	st := openStore(b, fx.dir)
	defer st.Close()
	query, err := search.ParseQuery(q)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	ix, err := search.Open(bg, st, search.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	// As the command lists (their leases, host.HolderLiveness, kept by
	// the index while the store stands still); no host serves these
	// sessions, so no socket directory is looked in.
	sessions, err := ix.Sessions(bg, func(ctx context.Context) ([]search.Session, error) {
		leases, err := rig.ListLeases(ctx, st, rig.WithLiveness(func(ctx context.Context, id string, h storage.Holder) rig.Liveness {
			return host.HolderLiveness(ctx, filepath.Join(fx.dir, "no-sockets"), id, h)
		}))
		return search.SessionsOfLeases(leases), err
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ix.Update(bg, sessions, nil); err != nil {
		b.Fatal(err)
	}
	n := 0
	if err := ix.Search(bg, query, search.Filter{}, func(search.Hit) error { n++; return nil }); err != nil {
		b.Fatal(err)
	}
	d := time.Since(t0)
	if n < fx.needles {
		b.Fatalf("search %q found %d lines, want %d at least", q, n, fx.needles)
	}
	return d
}

// rebuildIndex builds the fixture's index from scratch in this process and
// returns how long it took.
func rebuildIndex(b *testing.B, fx *searchFixture) time.Duration {
	st := openStore(b, fx.dir)
	defer st.Close()
	t0 := time.Now()
	ix, err := search.Open(bg, st, search.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := ix.Reset(bg); err != nil {
		b.Fatal(err)
	}
	var ses []search.Session
	for _, id := range fx.ids {
		ses = append(ses, search.Session{ID: id})
	}
	s, err := ix.Update(bg, ses, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		b.Fatal(err)
	}
	d := time.Since(t0)
	if s.Lines < int64(fx.lines) {
		b.Fatalf("the rebuild indexed %d lines, the journals hold %d output lines", s.Lines, fx.lines)
	}
	return d
}

// BenchmarkSearch: `looprig search` over a generated store
// (searchSize), end to end from the built command (a new process: open
// the store, list the sessions, check every journal's tip, search, print),
// against grep over the journal files in the same run: a rare word
// (eaddrinuse, case-insensitive: grep -ri) and a regexp whose only literal
// has 3 characters (/\bdea[0-9a-f]{5} /: an id of 8 hex digits that
// begins with "dea", in about one line of 4,000; grep -rE). Also the full rebuild's rate (MB of
// journal per second) and the index's size against the journals'.
//
// Metrics: word-p50-ms, word-p95-ms, grep-word-p50-ms, word-ratio (grep /
// ours, medians); rg-word-p50-ms, rg-word-ratio, rg-re-p50-ms,
// rg-re-ratio when ripgrep is installed (rg -a); ls-p50-ms (`looprig ls --json`: the command's start and
// a listing, which a search does when the store changed since the index
// kept one) and word-inproc-p50-ms (the word query in this process: open
// the index, take its kept listing or list, check it is up to date,
// search); re-p50-ms, re-p95-ms, grep-re-p50-ms, re-ratio;
// rebuild-MBps; index-ratio (the index file's size / the journal files'),
// index-disk-ratio (the disk blocks it takes: bbolt grows its file in
// doubling steps, sparse); journal-MB.
func BenchmarkSearch(b *testing.B) {
	bin := looprigBinary(b)
	sessions, lines := searchSize()
	fx := newSearchFixture(b, sessions, lines)
	env := append(os.Environ(), "XDG_CONFIG_HOME="+b.TempDir(), "NO_COLOR=1")
	rounds := pick(7, 21)
	for range b.N {
		rebuild := rebuildIndex(b, fx)
		var word, grepWord, re, grepRe, ls, inproc side
		run := func(s *side, want int, name string, args ...string) func() {
			return timedCommand(b, env, s, want, name, args...)
		}
		ledgers := filepath.Join(fx.dir, "ledgers")
		fns := []func(){
			run(&word, fx.needles, bin, "--store", fx.dir, "search", "eaddrinuse", "--kind", "output"),
			run(&grepWord, 1, "grep", "-ric", "eaddrinuse", ledgers),
			run(&re, 1, bin, "--store", fx.dir, "search", `/\bdea[0-9a-f]{5} /`),
			run(&grepRe, 1, "grep", "-rEc", `\bdea[0-9a-f]{5} `, ledgers),
			run(&ls, 1, bin, "--store", fx.dir, "ls", "--json"),
			func() { inproc.lat = append(inproc.lat, searchInProcess(b, fx, "eaddrinuse")) },
		}
		// ripgrep, when installed, as the issue asks (-a: the journal files
		// are framed, and rg stops reading a file it takes for binary).
		var rgWord, rgRe side
		rg, err := exec.LookPath("rg")
		if err == nil {
			fns = append(fns,
				run(&rgWord, 1, rg, "-a", "-i", "-c", "eaddrinuse", ledgers),
				run(&rgRe, 1, rg, "-a", "-c", `\bdea[0-9a-f]{5} `, ledgers))
		}
		interleave(rounds, fns...)
		if rg != "" {
			b.ReportMetric(rgWord.pct(0.5)/1e3, "rg-word-p50-ms")
			b.ReportMetric(rgWord.pct(0.5)/word.pct(0.5), "rg-word-ratio")
			b.ReportMetric(rgRe.pct(0.5)/1e3, "rg-re-p50-ms")
			b.ReportMetric(rgRe.pct(0.5)/re.pct(0.5), "rg-re-ratio")
		}
		size := dirBytes(b, filepath.Join(fx.dir, "search"))
		var stat syscall.Stat_t
		if err := syscall.Stat(filepath.Join(fx.dir, "search", search.FileName), &stat); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(word.pct(0.5)/1e3, "word-p50-ms")
		b.ReportMetric(word.pct(0.95)/1e3, "word-p95-ms")
		b.ReportMetric(grepWord.pct(0.5)/1e3, "grep-word-p50-ms")
		b.ReportMetric(grepWord.pct(0.5)/word.pct(0.5), "word-ratio")
		b.ReportMetric(ls.pct(0.5)/1e3, "ls-p50-ms")
		b.ReportMetric(inproc.pct(0.5)/1e3, "word-inproc-p50-ms")
		b.ReportMetric(re.pct(0.5)/1e3, "re-p50-ms")
		b.ReportMetric(re.pct(0.95)/1e3, "re-p95-ms")
		b.ReportMetric(grepRe.pct(0.5)/1e3, "grep-re-p50-ms")
		b.ReportMetric(grepRe.pct(0.5)/re.pct(0.5), "re-ratio")
		b.ReportMetric(float64(fx.journalBytes)/1e6/rebuild.Seconds(), "rebuild-MBps")
		b.ReportMetric(float64(size)/float64(fx.journalBytes), "index-ratio")
		b.ReportMetric(float64(stat.Blocks*512)/float64(fx.journalBytes), "index-disk-ratio")
		b.ReportMetric(float64(fx.journalBytes)/1e6, "journal-MB")
	}
}

// timedCommand returns a round that runs name with args in env, fails the
// benchmark when it fails or prints fewer than want lines, and records
// its time in s.
func timedCommand(b *testing.B, env []string, s *side, want int, name string, args ...string) func() {
	return func() {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0)
		if err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, stderr.String())
		}
		if n := strings.Count(out.String(), "\n"); n < want {
			b.Fatalf("%s %v printed %d lines, want %d at least:\n%s", name, args, n, want, out.String())
		}
		s.add(1, d)
		s.lat = append(s.lat, d)
	}
}
