// Command benchtable reads `go test -bench` output (several runs of each
// benchmark, from several packages) on standard input and prints the table
// of looprig's figures (docs/ARCHITECTURE.md, "Performance figures"):
// figure, ours, baseline, ratio, target, met — medians over the runs — and
// a last line `bench: N of M targets met`. scripts/bench runs it.
//
// A ratio is the median of the ratios each run reported (both sides of a
// comparison run interleaved in one process, so a noisy machine slows both
// alike), not the ratio of two medians.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// metric names one reported value of one benchmark.
type metric struct {
	bench string // benchmark name without the -GOMAXPROCS suffix
	unit  string // "ns/op" or a custom metric
}

// figure is one row of the table.
type figure struct {
	name   string
	ours   metric
	base   *metric // nil: no baseline
	ratio  *metric // nil: no ratio
	kind   string  // how ours and base print: "us", "ms", "ns", "rate", "MB", "pct", "n"
	target string  // "" for information only
	// check reports whether the target is met, given ours and the ratio.
	check func(ours, ratio float64) bool
	// scale: a figure of BenchmarkScaleLive (scripts/bench --scale only):
	// left out of the table, and its target not counted, when not run.
	scale bool
}

func m(bench, unit string) metric               { return metric{bench, unit} }
func p(bench, unit string) *metric              { return &metric{bench, unit} }
func atLeast(v float64) func(_, r float64) bool { return func(_, r float64) bool { return r >= v } }
func atMost(v float64) func(o, _ float64) bool  { return func(o, _ float64) bool { return o <= v } }
func oursAtLeast(v float64) func(o, _ float64) bool {
	return func(o, _ float64) bool { return o >= v }
}
func ratioAtMost(v float64) func(_, r float64) bool {
	return func(_, r float64) bool { return r <= v }
}

const (
	sl = "BenchmarkScaleLive"
	cf = "BenchmarkCheckpointFirst"
	cu = "BenchmarkCheckpointUnchanged"
	cr = "BenchmarkCheckpointRunTrue"
	cm = "BenchmarkCheckpointMaterialize"
	cg = "BenchmarkCheckpointGC"
	ib = "BenchmarkDurableAppend/size="
	gc = "BenchmarkGroupCommit"
	hl = "BenchmarkHostOutputLatency"
	ht = "BenchmarkHostThroughput"
	hi = "BenchmarkHostIdle"
	ti = "BenchmarkTUIIdle"
	ta = "BenchmarkTUIAttach"
	ra = "BenchmarkRestoreAllCrashed"
	ot = "BenchmarkOutputVsTmux"
	hs = "BenchmarkHostSlowSubscribers"
	hr = "BenchmarkHostReplaySubscribers"
	se = "BenchmarkSearch"
	sk = "BenchmarkTUISearchKey"
	sn = "BenchmarkSearchNATS"
	ae = "BenchmarkAttachEchoVsTmux"
	fi = "BenchmarkFloodTurnIndexing"
)

var figures = []figure{
	{name: "durable append 256 B (vs raw write+fdatasync)", ours: m(ib+"256", "ours-us"), base: p(ib+"256", "base-us"), ratio: p(ib+"256", "ratio"), kind: "us", target: "≥ 0.85×", check: atLeast(0.85)},
	{name: "durable append 256 B, p99 latency", ours: m(ib+"256", "p99-us"), base: p(ib+"256", "base-p99-us"), kind: "us", target: "≤ 10 ms", check: atMost(10_000)},
	{name: "durable append 4 KiB (vs raw write+fdatasync)", ours: m(ib+"4096", "ours-us"), base: p(ib+"4096", "base-us"), ratio: p(ib+"4096", "ratio"), kind: "us", target: "≥ 0.85×", check: atLeast(0.85)},
	{name: "durable append 4 KiB, p99 latency", ours: m(ib+"4096", "p99-us"), base: p(ib+"4096", "base-p99-us"), kind: "us", target: "≤ 10 ms", check: atMost(10_000)},
	{name: "group commit: 8 appenders vs 1 (journal, records/s)", ours: m(gc, "rate-8"), base: p(gc, "rate-1"), ratio: p(gc, "x8"), kind: "rate", target: "≥ 5×", check: atLeast(5)},
	{name: "group commit: 32 appenders vs 1", ours: m(gc, "rate-32"), base: p(gc, "rate-1"), ratio: p(gc, "x32"), kind: "rate"},
	{name: "group commit: 8 appenders vs bbolt (8 goroutines, 1 put/tx)", ours: m(gc, "rate-8"), base: p(gc, "bolt-8"), ratio: p(gc, "vs-bolt"), kind: "rate", target: "≥ 1.5×", check: atLeast(1.5)},
	{name: "single appender vs bbolt (1 put/tx)", ours: m(gc, "rate-1"), base: p(gc, "bolt-1"), ratio: p(gc, "vs-bolt-1"), kind: "rate"},
	{name: "records per fdatasync, 8 appenders", ours: m(gc, "batch-8"), kind: "n"},
	{name: "group commit: one batch's write+fdatasync, 8 appenders (vs 1 record's)", ours: m(gc, "flush-us-8"), base: p(gc, "flush-us-1"), kind: "us"},
	{name: "group commit: gap between batches (writers waking, re-queueing)", ours: m(gc, "gap-us-8"), kind: "us"},
	{name: "replay 10k records (vs raw read+CRC+encoding/json)", ours: m("BenchmarkReplay/records=10k", "ours-ms"), base: p("BenchmarkReplay/records=10k", "base-ms"), ratio: p("BenchmarkReplay/records=10k", "ratio"), kind: "ms", target: "≥ 0.5×", check: atLeast(0.5)},
	{name: "replay 100k records", ours: m("BenchmarkReplay/records=100k", "ours-ms"), base: p("BenchmarkReplay/records=100k", "base-ms"), ratio: p("BenchmarkReplay/records=100k", "ratio"), kind: "ms", target: "≥ 0.5×", check: atLeast(0.5)},
	{name: "replay 1M records", ours: m("BenchmarkReplay/records=1m", "ours-ms"), base: p("BenchmarkReplay/records=1m", "base-ms"), ratio: p("BenchmarkReplay/records=1m", "ratio"), kind: "ms", target: "≥ 0.5×", check: atLeast(0.5)},
	{name: "restore 10k records (vs raw read+CRC+encoding/json)", ours: m("BenchmarkRestore/records=10k", "ours-ms"), base: p("BenchmarkRestore/records=10k", "base-ms"), ratio: p("BenchmarkRestore/records=10k", "ratio"), kind: "ms"},
	{name: "restore 100k records", ours: m("BenchmarkRestore/records=100k", "ours-ms"), base: p("BenchmarkRestore/records=100k", "base-ms"), ratio: p("BenchmarkRestore/records=100k", "ratio"), kind: "ms", target: "≤ 1 s", check: atMost(1000)},
	{name: "restore 1M records", ours: m("BenchmarkRestore/records=1m", "ours-ms"), base: p("BenchmarkRestore/records=1m", "base-ms"), ratio: p("BenchmarkRestore/records=1m", "ratio"), kind: "ms"},
	{name: "restore 100k: bytes allocated", ours: m("BenchmarkRestore/records=100k", "alloc-MB"), kind: "MB"},
	{name: "restore 100k: peak heap incl. garbage (a process that only restores, GOGC=20)", ours: m("BenchmarkRestore/records=100k", "peak-heap-MB"), kind: "MB"},
	{name: "restore 100k: peak live heap (same process)", ours: m("BenchmarkRestore/records=100k", "peak-live-MB"), kind: "MB"},
	{name: "restore 1M: bytes allocated", ours: m("BenchmarkRestore/records=1m", "alloc-MB"), kind: "MB"},
	{name: "restore 1M: peak heap incl. garbage (a process that only restores, GOGC=20)", ours: m("BenchmarkRestore/records=1m", "peak-heap-MB"), kind: "MB"},
	{name: "restore 1M: peak live heap (same process)", ours: m("BenchmarkRestore/records=1m", "peak-live-MB"), kind: "MB"},
	{name: "`looprig search` word query, new process: p50 (vs grep -ri over the journals)", ours: m(se, "word-p50-ms"), base: p(se, "grep-word-p50-ms"), ratio: p(se, "word-ratio"), kind: "ms", target: "≤ 10 ms", check: atMost(10)},
	{name: "`looprig search` word query, new process: p50 (vs rg -a -i, when installed)", ours: m(se, "word-p50-ms"), base: p(se, "rg-word-p50-ms"), ratio: p(se, "rg-word-ratio"), kind: "ms"},
	{name: "`looprig search` word query, new process: p95", ours: m(se, "word-p95-ms"), kind: "ms", target: "≤ 50 ms", check: atMost(50)},
	{name: "`looprig ls --json` in the same run (the command's start and the listing a search does too)", ours: m(se, "ls-p50-ms"), kind: "ms"},
	{name: "search word query in process (list, open, catch up, search): p50", ours: m(se, "word-inproc-p50-ms"), kind: "ms"},
	{name: "`looprig search` regexp with a 3-character literal: p95 (p50 vs grep -rE)", ours: m(se, "re-p95-ms"), base: p(se, "grep-re-p50-ms"), ratio: p(se, "re-ratio"), kind: "ms", target: "≤ 200 ms", check: atMost(200)},
	{name: "`looprig search` regexp with a 3-character literal: p50 (vs rg -a, when installed)", ours: m(se, "re-p50-ms"), base: p(se, "rg-re-p50-ms"), ratio: p(se, "rg-re-ratio"), kind: "ms"},
	{name: "search index full rebuild, MB of journal per second", ours: m(se, "rebuild-MBps"), kind: "n", target: "≥ 50", check: oursAtLeast(50)},
	{name: "search index size / journals' size (disk blocks)", ours: m(se, "index-disk-ratio"), kind: "n", target: "≤ 0.5", check: atMost(0.5)},
	{name: "`looprig search` on NATS (embedded server): word query, new process, p50", ours: m(sn, "word-p50-ms"), kind: "ms", target: "≤ 10 ms", check: atMost(10)},
	{name: "`looprig search` on NATS: word query, p95", ours: m(sn, "word-p95-ms"), kind: "ms", target: "≤ 50 ms", check: atMost(50)},
	{name: "`looprig search` on NATS: regexp with a 3-character literal, p95", ours: m(sn, "re-p95-ms"), kind: "ms", target: "≤ 200 ms", check: atMost(200)},
	{name: "search index full rebuild on NATS, MB of records per second", ours: m(sn, "rebuild-MBps"), kind: "n", target: "≥ 50", check: oursAtLeast(50)},
	{name: "`looprig ls --json` on NATS in the same run", ours: m(sn, "ls-p50-ms"), kind: "ms"},
	{name: "a turn flooding output (`seq 1 2000000`, `looprig run`) begun as its host indexes the turn before (vs begun once the index caught up)", ours: m(fi, "into-ms"), base: p(fi, "after-ms"), ratio: p(fi, "into/after"), kind: "ms", target: "≤ 1.05×", check: ratioAtMost(1.05)},
	{name: "that turn's lines in the index after its end, indexed by its host (no search)", ours: m(fi, "index-lag-ms"), kind: "ms"},
	{name: "host indexing between turns, MB of output per second (short lines: `seq`)", ours: m(fi, "index-MB/s"), kind: "n"},
	{name: "TUI search: a keystroke to its results on the screen (through tmux; its blocks read by the keystroke before), p95", ours: m(sk, "key-p95-ms"), kind: "ms", target: "≤ 50 ms", check: atMost(50)},
	{name: "TUI search: a keystroke to its results on the screen, p50 (one capture-pane in each reading)", ours: m(sk, "key-p50-ms"), kind: "ms"},
	{name: "TUI search: a keystroke to its first results on the screen (the first 100 hits of more), p95", ours: m(sk, "first-p95-ms"), kind: "ms", target: "≤ 50 ms", check: atMost(50)},
	{name: "TUI search: a backspace that brings the hits back, to its first results, p95 (its whole answer: p50 in the next row)", ours: m(sk, "hits-first-p95-ms"), kind: "ms"},
	{name: "TUI search: a backspace that brings the hits back, to its whole answer, p50", ours: m(sk, "hits-p50-ms"), kind: "ms"},
	{name: "TUI search: a word pasted into a view just opened (every block decompressed), to its whole answer, p95 (p50 in the next row)", ours: m(sk, "cold-p95-ms"), kind: "ms"},
	{name: "TUI search: that pasted word, p50", ours: m(sk, "cold-p50-ms"), kind: "ms"},
	{name: "lease acquire+release (vs raw flock + epoch write + fsync)", ours: m("BenchmarkLease", "ours-us"), base: p("BenchmarkLease", "base-us"), ratio: p("BenchmarkLease", "x-raw"), kind: "us", target: "≤ 3× raw", check: ratioAtMost(3)},
	{name: "list 1k sessions (vs ReadDir + 1 small read each)", ours: m("BenchmarkList/sessions=1k", "ours-ms"), base: p("BenchmarkList/sessions=1k", "base-ms"), ratio: p("BenchmarkList/sessions=1k", "ratio"), kind: "ms"},
	{name: "list 10k sessions (vs ReadDir + 1 small read each)", ours: m("BenchmarkList/sessions=10k", "ours-ms"), base: p("BenchmarkList/sessions=10k", "base-ms"), ratio: p("BenchmarkList/sessions=10k", "ratio"), kind: "ms"},
	{name: "`looprig ls --json`, 10k sessions (new process)", ours: m("BenchmarkLsJSON", "ours-ms"), base: p("BenchmarkLsJSON", "base-ms"), ratio: p("BenchmarkLsJSON", "ratio"), kind: "ms", target: "≤ 0.5 s", check: atMost(500)},
	{name: "TUI first frame, 10k sessions", ours: m("BenchmarkTUIFirstFrame", "ours-ms"), base: p("BenchmarkTUIFirstFrame", "base-ms"), ratio: p("BenchmarkTUIFirstFrame", "ratio"), kind: "ms", target: "≤ 1 s", check: atMost(1000)},
	{name: "TUI live heap while reading the long session (10k sessions + 1M records; 100k in --quick)", ours: m("BenchmarkTUIMemory", "peak-live-MB"), kind: "MB", target: "bounded (≤ 256 MB)", check: atMost(256)},
	{name: "TUI process peak RSS, same run (a process that runs only the TUI)", ours: m("BenchmarkTUIMemory", "peak-rss-MB"), kind: "MB", target: "bounded (≤ 512 MB)", check: atMost(512)},
	{name: "TUI View, 10k sessions + 10k lines, 200×60", ours: m("BenchmarkView", "ns/op"), kind: "ns", target: "≤ 2 ms", check: atMost(2e6)},
	{name: "TUI 2M-line turn (seq): key→frame p99", ours: m("BenchmarkEventPath2M/seq", "p99-key-ms"), kind: "ms", target: "≤ 100 ms", check: atMost(100)},
	{name: "TUI 2M-line turn (line by line): key→frame p99", ours: m("BenchmarkEventPath2M/flushed", "p99-key-ms"), kind: "ms", target: "≤ 100 ms", check: atMost(100)},
	{name: "TUI 2M-line turn, every line coloured (SGR rendered by termrender): key→frame p99", ours: m("BenchmarkEventPath2M/colour", "p99-key-ms"), kind: "ms", target: "≤ 100 ms", check: atMost(100)},
	{name: "TUI 2M-line turn on a full-screen program's screen (virtual terminal): key→frame p99", ours: m("BenchmarkEventPath2M/screen", "p99-key-ms"), kind: "ms", target: "≤ 100 ms", check: atMost(100)},
	{name: "full-screen program's screen: top-like frames absorbed (vs the transcript's renderer)", ours: m("BenchmarkScreen/top/screen", "MB/s"), base: p("BenchmarkScreen/top/termrender", "MB/s"), kind: "MB/s"},
	{name: "screen opened with f on a scrolling flood (yes): output absorbed (vs the transcript's renderer)", ours: m("BenchmarkScreen/lines/screen", "MB/s"), base: p("BenchmarkScreen/lines/termrender", "MB/s"), kind: "MB/s"},
	{name: "TUI 2M-line turn, every line coloured: peak heap (incl. garbage)", ours: m("BenchmarkEventPath2M/colour", "peak-heap-MB"), kind: "MB", target: "bounded (≤ 256 MB)", check: atMost(256)},
	{name: "TUI 2M-line turn (line by line): peak heap (incl. garbage)", ours: m("BenchmarkEventPath2M/flushed", "peak-heap-MB"), kind: "MB", target: "bounded (≤ 256 MB)", check: atMost(256)},
	{name: "TUI 2M-line turn (line by line): lines/s absorbed", ours: m("BenchmarkEventPath2M/flushed", "lines/s"), kind: "rate"},
	{name: "TUI 2M-line turn (line by line): frames, MB written", ours: m("BenchmarkEventPath2M/flushed", "frames"), base: p("BenchmarkEventPath2M/flushed", "written-MB"), kind: "n"},
	{name: "host output latency, 10k lines/s, 2 clients on the socket: p99 (vs hub subscription in-process)", ours: m(hl, "ours-p99-ms"), base: p(hl, "base-p99-ms"), ratio: p(hl, "ratio"), kind: "ms", target: "≤ 20 ms", check: atMost(20)},
	{name: "live output to an attached client (rig.Follow through a background host), 2k lines/s: p99 (vs a tmux control-mode client)", ours: m(ot, "ours-p99-ms"), base: p(ot, "base-p99-ms"), ratio: p(ot, "ratio"), kind: "ms", target: "≤ 1.5× tmux", check: ratioAtMost(1.5)},
	{name: "live output to an attached client, 2k lines/s: p50 (vs tmux control mode)", ours: m(ot, "ours-p50-ms"), base: p(ot, "base-p50-ms"), kind: "ms"},
	{name: "`looprig attach` to a turn running cat: a typed line to its echo, p99 (vs `tmux attach` to a pane running cat)", ours: m(ae+"/line", "ours-p99-ms"), base: p(ae+"/line", "base-p99-ms"), ratio: p(ae+"/line", "ratio"), kind: "ms", target: "≤ 1.5× tmux", check: ratioAtMost(1.5)},
	{name: "`looprig attach` to a turn running cat: a typed line to its echo, p50 (vs `tmux attach`)", ours: m(ae+"/line", "ours-p50-ms"), base: p(ae+"/line", "base-p50-ms"), kind: "ms"},
	{name: "`looprig attach` to a full-screen program, keys raw: a typed line and Enter to its row on the screen, p99 (vs `tmux attach`)", ours: m(ae+"/fullscreen", "ours-p99-ms"), base: p(ae+"/fullscreen", "base-p99-ms"), ratio: p(ae+"/fullscreen", "ratio"), kind: "ms", target: "≤ 1.5× tmux", check: ratioAtMost(1.5)},
	{name: "`looprig attach` to a full-screen program: p50 (vs `tmux attach`)", ours: m(ae+"/fullscreen", "ours-p50-ms"), base: p(ae+"/fullscreen", "base-p50-ms"), kind: "ms"},
	{name: "`looprig attach` to a turn running cat on NATS: a typed line to its echo, p99 (vs `tmux attach`)", ours: m(ae+"/line-nats", "ours-p99-ms"), base: p(ae+"/line-nats", "base-p99-ms"), ratio: p(ae+"/line-nats", "ratio"), kind: "ms", target: "≤ 1.5× tmux", check: ratioAtMost(1.5)},
	{name: "host output latency, 10k lines/s: p50 (vs in-process)", ours: m(hl, "ours-p50-ms"), base: p(hl, "base-p50-ms"), kind: "ms"},
	{name: "host output latency: lines/s the generator reached (as the clients saw it)", ours: m(hl, "lines/s"), kind: "rate"},
	{name: "host output latency: deltas dropped for the 2 clients", ours: m(hl, "dropped"), kind: "n"},
	{name: "host throughput: `seq 2000000` turn to 1 client, submit→TurnDone (vs in-process)", ours: m(ht, "ours-ms"), base: p(ht, "base-ms"), ratio: p(ht, "ratio"), kind: "ms", target: "≤ 2×", check: ratioAtMost(2)},
	{name: "host throughput: MB of output the client got (vs in-process)", ours: m(ht, "ours-MB"), base: p(ht, "base-MB"), kind: "MB"},
	{name: "host throughput: deltas dropped for the client", ours: m(ht, "dropped"), kind: "n"},
	{name: "host throughput: streams lost (a durable event not fitting) and resubscribed", ours: m(ht, "resubs"), kind: "n"},
	{name: "host with 25 clients that never read, `seq 1 3000000` turn: peak RSS (vs the turn with the reading client alone)", ours: m(hs, "rss-MB"), base: p(hs, "base-rss-MB"), kind: "MB", target: "≤ 150 MB", check: atMost(150)},
	{name: "host with 25 clients that never read: the turn's time (vs the turn with the reading client alone)", ours: m(hs, "ours-ms"), base: p(hs, "base-ms"), ratio: p(hs, "ratio"), kind: "ms", target: "≤ 1.2×", check: ratioAtMost(1.2)},
	{name: "host with 25 clients that never read: a reading client's p99 line latency (vs alone)", ours: m(hs, "ours-p99-ms"), base: p(hs, "base-p99-ms"), ratio: p(hs, "p99-ratio"), kind: "ms", target: "≤ 2×", check: ratioAtMost(2)},
	{name: "host with 32 clients that never read, subscribed from the start of a 43 MB journal: peak RSS, the restore included (vs the host alone with a client reading it)", ours: m(hr, "rss-MB"), base: p(hr, "base-rss-MB"), kind: "MB", target: "≤ 150 MiB (157 MB)", check: atMost(157.3)},
	{name: "host with 32 clients that never read from the start of a 43 MB journal: another client reading it (vs the host alone)", ours: m(hr, "ours-ms"), base: p(hr, "base-ms"), ratio: p(hr, "ratio"), kind: "ms"},
	{name: "host with 32 clients that never read from the start of a 43 MB journal: another client's first event (vs the host alone)", ours: m(hr, "first-ms"), base: p(hr, "base-first-ms"), kind: "ms"},
	{name: "32 clients subscribing from the start of a 43 MB journal and never reading: until the host is quiet (queues filled, the rest cut)", ours: m(hr, "settle-ms"), kind: "ms"},
	{name: "idle host (`looprig new --detach`, no client): CPU % of one core (vs a Go process polling a lease file every 500 ms)", ours: m(hi, "cpu-ns-pct"), base: p(hi, "base-cpu-ns-pct"), ratio: p(hi, "ratio"), kind: "pct", target: "≤ 0.1 %", check: atMost(0.1)},
	{name: "idle host: CPU % from /proc/PID/stat utime+stime (10 ms ticks)", ours: m(hi, "cpu-pct"), kind: "pct"},
	{name: "idle host: RSS (VmRSS, end of the window)", ours: m(hi, "rss-MB"), kind: "MB", target: "≤ 25 MB", check: atMost(25)},
	{name: "idle host: peak RSS (VmHWM)", ours: m(hi, "hwm-MB"), kind: "MB"},
	{name: "idle TUI, 1,000 sessions: CPU % above a bare Bubble Tea program's (vs listing every second)", ours: m(ti, "own-cpu-pct"), base: p(ti, "base-cpu-pct"), ratio: p(ti, "ratio"), kind: "pct", target: "≤ 0.5 %", check: atMost(0.5)},
	{name: "TUI start to the first frame of a live session's tail, 100k-record journal (vs reading its events in process)", ours: m(ta, "ours-ms"), base: p(ta, "base-ms"), ratio: p(ta, "ratio"), kind: "ms", target: "≤ 150 ms", check: atMost(150)},
	{name: "restore 50 crashed sessions: `restore --all-crashed` (vs 50 sequential `looprig restore ID`)", ours: m(ra, "ours-ms"), base: p(ra, "base-ms"), ratio: p(ra, "ratio"), kind: "ms", target: "≥ 3×", check: atLeast(3)},
	{name: "idle TUI, 1,000 sessions: CPU % in all (vs a Bubble Tea program drawing one line at the same frame rate)", ours: m(ti, "cpu-pct"), base: p(ti, "floor-cpu-pct"), ratio: p(ti, "floor-ratio"), kind: "pct", target: "≤ 1.1× the floor", check: ratioAtMost(1.1)},
	{name: "a key to the TUI's frame, 1,000 sessions, in a pty: p99 of 100, nearest rank (vs a bare Bubble Tea program drawn by its renderer at the same frame rate)", ours: m("BenchmarkTUIKeyFrame", "key-p99-ms"), base: p("BenchmarkTUIKeyFrame", "floor-key-p99-ms"), ratio: p("BenchmarkTUIKeyFrame", "p99-ratio"), kind: "ms", target: "≤ 16 ms", check: atMost(16)},
	{name: "a key to the TUI's frame, 1,000 sessions, in a pty: p50", ours: m("BenchmarkTUIKeyFrame", "key-p50-ms"), base: p("BenchmarkTUIKeyFrame", "floor-key-p50-ms"), kind: "ms"},
	{name: "a key to the TUI's frame, 1,000 sessions, in a pty: the slowest of 100", ours: m("BenchmarkTUIKeyFrame", "key-max-ms"), kind: "ms"},
	{name: "first workspace checkpoint, 10k × 2 KiB, fsstore (vs `tar -c . | sha256sum`; ratio: its time over ours, the throughput)", ours: m(cf+"/fsstore", "take-ms"), base: p(cf+"/fsstore", "tar|sha256sum-ms"), ratio: p(cf+"/fsstore", "throughput-vs-tar"), kind: "ms", target: "≥ 0.5× tar", check: atLeast(0.5)},
	{name: "first workspace checkpoint, 10k × 2 KiB, NATS (vs `tar -c . | sha256sum`)", ours: m(cf+"/nats", "take-ms"), base: p(cf+"/nats", "tar|sha256sum-ms"), ratio: p(cf+"/nats", "throughput-vs-tar"), kind: "ms", target: "≥ 0.25× tar", check: atLeast(0.25)},
	{name: "checkpoint of the unchanged tree, fsstore (vs a bare stat walk of it)", ours: m(cu+"/fsstore", "unchanged-ms"), base: p(cu+"/fsstore", "statwalk-ms"), ratio: p(cu+"/fsstore", "unchanged/statwalk"), kind: "ms", target: "≤ 1.5×", check: ratioAtMost(1.5)},
	{name: "checkpoint of the unchanged tree, NATS (vs a bare stat walk of it)", ours: m(cu+"/nats", "unchanged-ms"), base: p(cu+"/nats", "statwalk-ms"), ratio: p(cu+"/nats", "unchanged/statwalk"), kind: "ms", target: "≤ 1.5×", check: ratioAtMost(1.5)},
	{name: "bytes stored by a checkpoint of the unchanged tree (both stores)", ours: m(cu+"/fsstore", "unchanged-stored-B"), kind: "n", target: "≤ 4 KiB", check: atMost(4096)},
	{name: "checkpoint with one file changed, fsstore (vs a bare stat walk)", ours: m(cu+"/fsstore", "one-changed-ms"), base: p(cu+"/fsstore", "statwalk-ms"), ratio: p(cu+"/fsstore", "one-changed/statwalk"), kind: "ms", target: "≤ 2×", check: ratioAtMost(2)},
	{name: "checkpoint with one file changed, NATS (vs a bare stat walk)", ours: m(cu+"/nats", "one-changed-ms"), base: p(cu+"/nats", "statwalk-ms"), ratio: p(cu+"/nats", "one-changed/statwalk"), kind: "ms", target: "≤ 2×", check: ratioAtMost(2)},
	{name: "`looprig run ID -- true` and its checkpoint, 10k tree, fsstore (vs checkpoints off)", ours: m(cr, "on-ms"), base: p(cr, "off-ms"), ratio: p(cr, "on/off"), kind: "ms", target: "≤ 1.15×", check: ratioAtMost(1.15)},
	{name: "`looprig fork ID` of a 10k tree, end to end, fsstore (vs `git worktree add` of the same tree)", ours: m("BenchmarkForkCLI", "fork-ms"), base: p("BenchmarkForkCLI", "git-worktree-add-ms"), ratio: p("BenchmarkForkCLI", "fork/git"), kind: "ms", target: "≤ 1.5×", check: ratioAtMost(1.5)},
	{name: "materialize the 10k tree, fsstore, verified and synced (vs `tar -x`; ratio: its time over ours)", ours: m(cm+"/fsstore", "materialize-ms"), base: p(cm+"/fsstore", "tar-x-ms"), ratio: p(cm+"/fsstore", "speed-vs-tar-x"), kind: "ms", target: "≥ 0.5× tar -x", check: atLeast(0.5)},
	{name: "materialize the 10k tree, NATS (vs `tar -x`)", ours: m(cm+"/nats", "materialize-ms"), base: p(cm+"/nats", "tar-x-ms"), ratio: p(cm+"/nats", "speed-vs-tar-x"), kind: "ms", target: "≥ 0.5× tar -x", check: atLeast(0.5)},
	{name: "`tar -x` of the same tree followed by `sync -f` (for reference)", ours: m(cm+"/fsstore", "tar-x+sync-ms"), kind: "ms"},
	{name: "gc of 5,000 unreferenced blobs, fsstore (vs deleting them one at a time)", ours: m(cg+"/fsstore", "gc-ms"), base: p(cg+"/fsstore", "one-by-one-ms"), ratio: p(cg+"/fsstore", "speedup"), kind: "ms", target: "≤ 2 s", check: atMost(2000)},
	{name: "gc of 5,000 unreferenced blobs, NATS (vs one at a time)", ours: m(cg+"/nats", "gc-ms"), base: p(cg+"/nats", "one-by-one-ms"), ratio: p(cg+"/nats", "speedup"), kind: "ms"},
	{name: "first checkpoint of a 100 MB tree with a 64 MiB file: the host's peak memory above idle", ours: m("BenchmarkCheckpointMemory", "peak-above-idle-MiB"), kind: "n", target: "≤ 64 MiB", check: atMost(64)},
	{name: "`looprig ls`, 100 sessions live in background hosts (new process; vs `tmux ls` with 100 sessions)", ours: m("BenchmarkLsLive", "ours-ms"), base: p("BenchmarkLsLive", "base-ms"), ratio: p("BenchmarkLsLive", "ratio"), kind: "ms", target: "≤ 3× tmux", check: ratioAtMost(3)},
	{name: "idle TUI, 100 sessions live in background hosts: CPU % in all (vs a Bubble Tea program drawing one line at the same frame rate)", ours: m("BenchmarkTUIIdleLive", "cpu-pct"), base: p("BenchmarkTUIIdleLive", "floor-cpu-pct"), kind: "pct", target: "≤ 0.3 %", check: atMost(0.3)},
	{name: "1,000 live sessions: PSS of an idle host (median)", ours: m(sl, "pss-kB"), kind: "n", target: "≤ 2,560 kB", check: atMost(2560), scale: true},
	{name: "1,000 live sessions: CPU of the idle hosts together, % of a core", ours: m(sl, "idle-hosts-cpu-pct"), kind: "pct", target: "≤ 0.1 %", check: atMost(0.1), scale: true},
	{name: "1,000 live sessions: `looprig ls` (vs `tmux ls` with 1,000 panes)", ours: m(sl, "ls-ms"), base: p(sl, "tmux-ls-ms"), ratio: p(sl, "ls-ratio"), kind: "ms", target: "≤ 3× tmux", check: ratioAtMost(3), scale: true},
	{name: "1,000 live sessions: idle TUI CPU % (vs a bare Bubble Tea program at the same frame rate)", ours: m(sl, "tui-cpu-pct"), base: p(sl, "floor-cpu-pct"), ratio: p(sl, "tui-ratio"), kind: "pct", target: "≤ 1.1× the floor", check: ratioAtMost(1.1), scale: true},
	{name: "1,000 live sessions: TUI start to a frame with live rows", ours: m(sl, "tui-first-frame-ms"), kind: "ms", target: "≤ 300 ms", check: atMost(300), scale: true},
	{name: "1,000 live sessions: the store's first TUI, start to a frame (a full listing: no TUI ran there, no listing kept)", ours: m(sl, "tui-first-ever-frame-ms"), kind: "ms", scale: true},
	{name: "1,000 live sessions: a key to the TUI's next output, in a pty of its own, p99 of 100 (nearest rank)", ours: m(sl, "tui-pty-key-p99-ms"), kind: "ms", target: "≤ 16 ms", check: atMost(16), scale: true},
	{name: "1,000 live sessions: the same, the slowest of 100 keys", ours: m(sl, "tui-pty-key-max-ms"), kind: "ms", scale: true},
	{name: "1,000 live sessions: the same, p50", ours: m(sl, "tui-pty-key-p50-ms"), kind: "ms", scale: true},
	{name: "1,000 live sessions: a key to the TUI's frame through tmux, second slowest of 40 (baseline: one capture-pane, included in each reading)", ours: m(sl, "tui-key-p99-ms"), base: p(sl, "capture-pane-ms"), kind: "ms", scale: true},
	{name: "1,000 live sessions: `looprig attach` to first output, p99 of 10 (vs `tmux attach`)", ours: m(sl, "attach-p99-ms"), base: p(sl, "tmux-attach-p99-ms"), ratio: p(sl, "attach-ratio"), kind: "ms", target: "≤ 2× tmux", check: ratioAtMost(2), scale: true},
	{name: "1,000 crashed sessions: `restore --all-crashed`, each exactly once", ours: m(sl, "restore-all-s"), kind: "n", target: "≤ 60 s", check: atMost(60), scale: true},
	{name: "agent turn through looprig (`looprig run`: host, journal, hooks, checkpoint, transcript stored; vs `claude -p` run directly on the same scripted model)", ours: m("BenchmarkAgentTurn", "ours-ms"), base: p("BenchmarkAgentTurn", "base-ms"), kind: "ms"},
	{name: "what looprig adds to an agent turn (median of ours less the CLI's)", ours: m("BenchmarkAgentTurn", "added-ms"), kind: "ms", target: "≤ 50 ms", check: atMost(50)},
	{name: "agent tool call with a durable gate answered by a script, p99 (vs the call allowed by agent_allow)", ours: m("BenchmarkAgentGate", "gated-p99-ms"), base: p("BenchmarkAgentGate", "allowed-p99-ms"), kind: "ms"},
	{name: "what the gate's round trip adds to a tool call, median", ours: m("BenchmarkAgentGate", "gate-p50-added-ms"), kind: "ms"},
	{name: "what the gate's round trip adds to a tool call, p99 (hook → GateOpened journaled → approve → the agent)", ours: m("BenchmarkAgentGate", "gate-p99-added-ms"), kind: "ms", target: "≤ 100 ms", check: atMost(100)},
	{name: "hub publish ephemeral, 1 sub never reading (vs raw channel fan-out)", ours: m("BenchmarkPublishEphemeral/01subs", "ns/op"), base: p("BenchmarkRawFanout/01subs", "ns/op"), kind: "ns"},
	{name: "hub publish ephemeral, 4 subs, 1 never reading", ours: m("BenchmarkPublishEphemeral/04subs", "ns/op"), base: p("BenchmarkRawFanout/04subs", "ns/op"), kind: "ns"},
	{name: "hub publish ephemeral, 16 subs, 1 never reading", ours: m("BenchmarkPublishEphemeral/16subs", "ns/op"), base: p("BenchmarkRawFanout/16subs", "ns/op"), kind: "ns"},
	{name: "render `seq 2000000` (14 MB) as a view streams it, 256 colours (vs textsafe.Sanitize)", ours: m("BenchmarkRender/seq/stream-ANSI256", "MB/s"), base: p("BenchmarkRender/seq/textsafe", "MB/s"), kind: "MB/s", target: "≥ 50 MB/s", check: oursAtLeast(50)},
	{name: "render coloured output (git log -p, ls, grep, compiler, truecolor, progress bars) as a view streams it (vs textsafe.Sanitize)", ours: m("BenchmarkRender/color/stream-ANSI256", "MB/s"), base: p("BenchmarkRender/color/textsafe", "MB/s"), kind: "MB/s", target: "≥ 50 MB/s", check: oursAtLeast(50)},
	{name: "hub publish enduring (no-op journal), 1 sub never reading", ours: m("BenchmarkPublishEnduring/01subs", "ns/op"), base: p("BenchmarkRawFanout/01subs", "ns/op"), kind: "ns"},
	{name: "hub publish enduring, 4 subs, 1 never reading", ours: m("BenchmarkPublishEnduring/04subs", "ns/op"), base: p("BenchmarkRawFanout/04subs", "ns/op"), kind: "ns"},
	{name: "hub publish enduring, 16 subs, 1 never reading", ours: m("BenchmarkPublishEnduring/16subs", "ns/op"), base: p("BenchmarkRawFanout/16subs", "ns/op"), kind: "ns"},
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// parse collects every value of every metric, in input order.
func parse(r io.Reader) (map[metric][]float64, error) {
	vals := map[metric][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		mm := benchLine.FindStringSubmatch(sc.Text())
		if mm == nil {
			continue
		}
		f := strings.Fields(mm[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			k := metric{mm[1], f[i+1]}
			vals[k] = append(vals[k], v)
		}
	}
	return vals, sc.Err()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func format(v float64, kind string) string {
	switch kind {
	case "ns":
		switch {
		case v >= 1e6:
			return fmt.Sprintf("%.2f ms", v/1e6)
		case v >= 1e3:
			return fmt.Sprintf("%.1f µs", v/1e3)
		}
		return fmt.Sprintf("%.0f ns", v)
	case "us":
		switch {
		case v >= 1e6:
			return fmt.Sprintf("%.2f s", v/1e6)
		case v >= 1e3:
			return fmt.Sprintf("%.2f ms", v/1e3)
		}
		return fmt.Sprintf("%.0f µs", v)
	case "ms":
		if v >= 1e3 {
			return fmt.Sprintf("%.2f s", v/1e3)
		}
		if v >= 10 {
			return fmt.Sprintf("%.0f ms", v)
		}
		return fmt.Sprintf("%.1f ms", v)
	case "rate":
		if v >= 1e6 {
			return fmt.Sprintf("%.2fM/s", v/1e6)
		}
		if v >= 1e3 {
			return fmt.Sprintf("%.1fk/s", v/1e3)
		}
		return fmt.Sprintf("%.0f/s", v)
	case "MB":
		return fmt.Sprintf("%.1f MB", v)
	case "MB/s":
		return fmt.Sprintf("%.0f MB/s", v)
	case "pct":
		return fmt.Sprintf("%.3f %%", v)
	}
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return fmt.Sprintf("%.2f", v)
}

func main() {
	header := flag.String("header", "", "a line printed above the table")
	scaleOnly := flag.Bool("scale", false, "only the figures of BenchmarkScaleLive (scripts/bench --scale)")
	flag.Parse()
	vals, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if *header != "" {
		fmt.Println(*header)
		fmt.Println()
	}
	fmt.Println("| figure | ours | baseline | ratio | target | met |")
	fmt.Println("|---|---|---|---|---|---|")
	met, targets := 0, 0
	for _, f := range figures {
		ov, ok := vals[f.ours]
		if (!ok && f.scale) || (*scaleOnly && !f.scale) {
			continue
		}
		if !ok {
			cell := "not run"
			if f.target != "" {
				targets++
				cell = "NOT RUN"
			}
			fmt.Printf("| %s | — | — | — | %s | %s |\n", f.name, orDash(f.target), cell)
			continue
		}
		ours := median(ov)
		base, ratio := "—", "—"
		var r float64
		if f.base != nil {
			if bv, ok := vals[*f.base]; ok {
				base = format(median(bv), f.kind)
				if f.base.unit == "written-MB" {
					base = format(median(bv), "MB") + " written"
				}
			}
		}
		if f.ratio != nil {
			if rv, ok := vals[*f.ratio]; ok {
				r = median(rv)
				ratio = fmt.Sprintf("%.2f×", r)
			}
		} else if f.base != nil && f.kind == "ns" {
			if bv, ok := vals[*f.base]; ok && ours > 0 {
				r = median(bv) / ours
				ratio = fmt.Sprintf("%.2f×", r)
			}
		}
		verdict := "—"
		if f.target != "" {
			targets++
			if f.check(ours, r) {
				met++
				verdict = "yes"
			} else {
				verdict = "**NO**"
			}
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", f.name, format(ours, f.kind), base, ratio, orDash(f.target), verdict)
	}
	fmt.Println()
	fmt.Printf("bench: %d of %d targets met\n", met, targets)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
