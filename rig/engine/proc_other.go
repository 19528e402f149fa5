//go:build !linux && !darwin

package engine

import (
	"context"
	"fmt"
	"runtime"
)

// The shell engine relies on process handling only written for Linux and
// Darwin (proc_unix.go); elsewhere it refuses to run.
func (s *shell) run(ctx context.Context, turn Turn, sink Sink) (Result, error) {
	return Result{ExitCode: NoExitCode}, fmt.Errorf("engine shell: not supported on %s", runtime.GOOS)
}
