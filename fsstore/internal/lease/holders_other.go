//go:build !linux

package lease

import "looprig/rig/storage"

// holderWatch is not available here (no pidfd): HolderStamp never
// answers, and the change stamp has no way to see a holder's death.
type holderWatch struct{}

func newHolderWatch() *holderWatch                        { return &holderWatch{} }
func (w *holderWatch) note([]storage.LeaseStatus, string) {}
func (w *holderWatch) stamp() (uint64, bool)              { return 0, false }
func (w *holderWatch) close()                             {}
