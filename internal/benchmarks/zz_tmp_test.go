package benchmarks

import (
	"syscall"
	"testing"
	"time"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkTmpRebuild(b *testing.B) {
	sessions, lines := searchSize()
	fx := newSearchFixture(b, sessions, lines)
	b.ResetTimer()
	for range b.N {
		c0 := cpuNow()
		d := rebuildIndex(b, fx)
		c := cpuNow() - c0
		b.Logf("rebuild %v %.1f MB/s cpu %v (%.2f cores)", d, float64(fx.journalBytes)/1e6/d.Seconds(), c, c.Seconds()/d.Seconds())
	}
}
