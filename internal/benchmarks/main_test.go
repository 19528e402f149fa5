package benchmarks

import (
	"context"
	"encoding/json"
	"fmt"
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
	if spec := os.Getenv(corpusChildEnv); spec != "" {
		os.Exit(generateCorpusChild(spec))
	}
	code := m.Run()
	testbin.Cleanup()
	if rootDir != "" && !keep {
		os.RemoveAll(rootDir)
	}
	os.Exit(code)
}

// corpusChildEnv, when set ("DIR SESSIONS LINES"), makes this test binary
// generate that search corpus (GenerateSearchCorpus), print it as JSON and
// exit: the corpus's sessions are then last held by a process that is
// gone, as a store's idle sessions are (their hosts exited), not by the
// benchmark, which lives on and would make every listing ask the kernel's
// lock table about them.
const corpusChildEnv = "LOOPRIG_BENCH_GENERATE_SEARCH_CORPUS"

func generateCorpusChild(spec string) int {
	var dir string
	var sessions, lines int
	if _, err := fmt.Sscan(spec, &dir, &sessions, &lines); err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: %v\n", corpusChildEnv, spec, err)
		return 2
	}
	c, err := GenerateSearchCorpus(context.Background(), dir, sessions, lines)
	if err == nil {
		err = json.NewEncoder(os.Stdout).Encode(c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
