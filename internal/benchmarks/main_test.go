package benchmarks

import (
	"os"
	"testing"

	"looprig/internal/testbin"
)

func makeTempRoot() (string, error) {
	if dir := os.Getenv("LOOPRIG_BENCH_DIR"); dir != "" {
		keep = true
		return dir, os.MkdirAll(dir, 0o700)
	}
	return os.MkdirTemp("", "looprig-bench-")
}

// keep is set when fixtures live in $LOOPRIG_BENCH_DIR.
var keep bool

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	if rootDir != "" && !keep {
		os.RemoveAll(rootDir)
	}
	os.Exit(code)
}
