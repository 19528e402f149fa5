//go:build looprig_e2e

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"looprig/host"
	"looprig/rig"
)

// The end-to-end tests' hooks (see testhooks.go), driven by the
// environment of the process (a host inherits its starter's):
//
//   - LOOPRIG_E2E_CHECKPOINT_HOLD=DIR: while DIR/hold exists, a checkpoint
//     that has stored all its files (its last progress report:
//     rig.WithCheckpointProgress) writes DIR/held-PID-N and waits until
//     DIR/hold is removed (at most 5 minutes): a checkpoint as long as
//     the test wants, without a slow disk.
//   - LOOPRIG_E2E_MATERIALIZE_SLOW=D: a restore's progress report sleeps D
//     each time it is called: a restore long enough to show its progress.
//   - LOOPRIG_E2E_HOST_MAX_CLIENTS=N: a host serves N clients at once
//     (host.WithMaxClients) rather than host.DefaultMaxClients: a test
//     fills the default's connections with clients that never read and
//     still has one that reads.
//   - LOOPRIG_E2E_CLOCK_RATE=N: the TUI's clock runs N times as fast as
//     the wall clock from the TUI's start: what it says of time (how long
//     a turn has run, since when a session is idle, when a host is probed
//     again) is tried for an hour in a minute.
//   - LOOPRIG_E2E_SCREEN_FRAMES=D: a full-screen program's screen on run's
//     or attach's terminal draws a change at most once every D, and at
//     once only after a quiet spell of D or as the echo of keys typed
//     (screen_term.go): with D long, what is drawn at once is told from
//     what waits for the frame timer.
const (
	e2eHoldEnv       = "LOOPRIG_E2E_CHECKPOINT_HOLD"
	e2eSlowEnv       = "LOOPRIG_E2E_MATERIALIZE_SLOW"
	e2eMaxClientsEnv = "LOOPRIG_E2E_HOST_MAX_CLIENTS"
	e2eClockRateEnv  = "LOOPRIG_E2E_CLOCK_RATE"
	e2eScreenFrames  = "LOOPRIG_E2E_SCREEN_FRAMES"
)

func init() {
	testRigOptions = func() []rig.Option {
		dir := os.Getenv(e2eHoldEnv)
		if dir == "" {
			return nil
		}
		var n atomic.Int64
		return []rig.Option{rig.WithCheckpointProgress(func(id string, p rig.CheckpointProgress) {
			hold := filepath.Join(dir, "hold")
			if p.Files == 0 || p.FilesDone < p.Files {
				return
			}
			if _, err := os.Stat(hold); err != nil {
				return
			}
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("held-%d-%d", os.Getpid(), n.Add(1))), []byte(id), 0o600)
			for end := time.Now().Add(5 * time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(hold); err != nil {
					return
				}
			}
		})}
	}
	testHostOptions = func() []host.Option {
		n, err := strconv.Atoi(os.Getenv(e2eMaxClientsEnv))
		if err != nil || n <= 0 {
			return nil
		}
		return []host.Option{host.WithMaxClients(n)}
	}
	testTUIClock = func() func() time.Time {
		rate, err := strconv.Atoi(os.Getenv(e2eClockRateEnv))
		if err != nil || rate <= 1 {
			return nil
		}
		start := time.Now()
		return func() time.Time { return start.Add(time.Since(start) * time.Duration(rate)) }
	}
	testScreenFrames = func() time.Duration {
		d, _ := time.ParseDuration(os.Getenv(e2eScreenFrames))
		return d
	}
	testMaterializeProgress = func(f func(done, total int64)) func(done, total int64) {
		d, err := time.ParseDuration(os.Getenv(e2eSlowEnv))
		if err != nil || d <= 0 {
			return f
		}
		return func(done, total int64) {
			time.Sleep(d)
			f(done, total)
		}
	}
}
