package benchmarks

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"
)

// waitQuiet waits, up to limit, until the machine's CPUs have been at
// least 95 % idle over half a second (from /proc/stat), so that a
// measurement does not include the start of what a benchmark just set up
// (100 shells and hosts starting take seconds on a small machine). Where
// /proc/stat cannot be read it waits 3 s. It logs how long it waited.
func waitQuiet(tb testing.TB, limit time.Duration) {
	tb.Helper()
	start := time.Now()
	if _, _, ok := cpuTimes(); !ok {
		time.Sleep(3 * time.Second)
		return
	}
	for time.Since(start) < limit {
		idle0, total0, _ := cpuTimes()
		time.Sleep(500 * time.Millisecond)
		idle1, total1, _ := cpuTimes()
		if total1 > total0 && float64(idle1-idle0)/float64(total1-total0) >= 0.95 {
			tb.Logf("quiet after %s", time.Since(start).Round(100*time.Millisecond))
			return
		}
	}
	tb.Logf("not quiet after %s: measuring anyway", limit)
}

// cpuTimes reads the idle and total jiffies of all CPUs from /proc/stat.
func cpuTimes() (idle, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 5 || string(f[0]) != "cpu" {
		return 0, 0, false
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return idle, total, true
}
