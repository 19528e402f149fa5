package cli_test

import (
	"strings"
	"sync"
	"syscall"
	"testing"
)

// A host SIGKILLed while its turn floods output, restored at once (no
// wait for its exit, as a user demoing a crash does): every restore
// succeeds, 20 of 20. A dead holder's lock is released by the kernel a
// moment after it dies (its threads exit one by one, and a zombie is left
// until it is reaped); the restore waits for that, briefly, rather than
// refusing "held by pid N" for a process that is already dead.
func TestRestoreAtOnceAfterKill(t *testing.T) {
	h := newHarness(t)
	const tries, together = 20, 4
	var mu sync.Mutex
	var failed []string
	sem := make(chan struct{}, together)
	var wg sync.WaitGroup
	for range tries {
		id, pid := h.detached()
		h.submit(id, "yes flood-of-output")
		h.waitLog(id, "TurnOutput")
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Error(err)
				return
			}
			r := h.run("restore", id)
			if r.code != 0 || !strings.Contains(r.stdout, "restored session") {
				mu.Lock()
				failed = append(failed, r.stderr)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("%d of %d restores at once after SIGKILL failed:\n%s", len(failed), tries, strings.Join(failed, ""))
	}
}
