//go:build !linux

package lease

import "time"

// notifier is not available here: the watchdog polls at its period.
type notifier struct{ changes chan struct{} }

func newNotifier() *notifier                  { return nil }
func (n *notifier) watch(string, string) bool { return false }
func (n *notifier) rewatchEpoch(string) bool  { return false }
func (n *notifier) poke()                     {}
func (n *notifier) close()                    {}
func (n *notifier) coalesce() time.Duration   { return 0 }
