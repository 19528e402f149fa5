//go:build !linux

package engine

import (
	"context"
	"fmt"
	"runtime"
)

// The shell engine relies on Linux process handling (setsid, waitid
// WNOWAIT, /proc); elsewhere it refuses to run.
func (s *shell) run(ctx context.Context, turn Turn, sink Sink) (Result, error) {
	return Result{ExitCode: NoExitCode}, fmt.Errorf("engine shell: not supported on %s", runtime.GOOS)
}
