// Faults: how a live session latches one (faultWith), and the watcher
// that turns a lost lease into one and polls for hand-over requests.

package rig

import (
	"context"
	"errors"
	"time"

	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// faultWith latches err as the session's fault (the first one wins),
// publishes SessionFaulted, and cancels the session context so running
// turns stop.
func (s *Session) faultWith(err error) {
	// A fenced journal means a successor appended after our tip: the lease
	// is lost even if the watchdog has not said so yet. Report it as such.
	var fenced *journal.FencedError
	var lost *journal.JournalLeaseLostError
	if errors.As(err, &fenced) && !errors.As(err, &lost) {
		err = &journal.JournalLeaseLostError{Name: s.name, Epoch: s.lease.Epoch(), Cause: err}
	}
	s.mu.Lock()
	if s.fault != nil {
		s.mu.Unlock()
		return
	}
	s.fault = err
	s.mu.Unlock()
	s.hub.Publish(context.Background(), "", event.SessionFaulted{Cause: err.Error()})
	s.cancel(causeLeaseLost)
}

// watch turns lease loss into a latched fault. It runs from the moment the
// session is live until Shutdown stops it.
func (s *Session) watch() {
	defer close(s.watchDone)
	var rootLost <-chan struct{}
	if s.ws.lease != nil {
		rootLost = s.ws.lease.Lost()
	}
	// The hand-over poll reads the store, which can hang (a dropped NATS
	// connection): it runs on its own, so that a lost lease is latched at
	// once whatever a read does.
	stopPoll := make(chan struct{})
	go s.pollHandOff(stopPoll)
	defer close(stopPoll) // it returns once a read in progress does (bounded by the read's own deadline)
	for {
		select {
		case <-s.lease.Lost():
			s.faultWith(&journal.JournalLeaseLostError{Name: s.name, Epoch: s.lease.Epoch(), Cause: storage.LostCause(s.name, s.lease)})
			return
		case <-rootLost:
			s.faultWith(&WorkspaceRootLeaseLostError{Root: s.ws.root, Epoch: s.ws.lease.Epoch(),
				Cause: storage.LostCause(rootLeaseName(s.ws.root), s.ws.lease)})
			return
		case <-s.stopWatch:
			return
		}
	}
}

// pollHandOff looks for a request to hand the session over
// (checkHandOff, its read bounded on its own), until stop closes (the
// watcher's end): when the store tells of changes to the request's key
// (storage.KeyWatcher), at each change and every handoffIdlePoll; else,
// or until the key can be watched (its directory may come with the
// session's first catalog entry), every handoffPoll. An idle session on
// such a store (fsstore) does not wake once a second.
func (s *Session) pollHandOff(stop <-chan struct{}) {
	w, _ := s.rig.store.(storage.KeyWatcher)
	var changed <-chan struct{}
	poll := time.NewTicker(s.rig.handoffPoll)
	defer poll.Stop()
	for {
		if changed == nil && w != nil {
			if c, unwatch, err := w.WatchKey(handoffKey(s.id.String())); err == nil {
				defer unwatch()
				changed = c
				poll.Reset(max(s.rig.handoffPoll, handoffIdlePoll))
				s.checkHandOff() // a request put before the watch began
			}
		}
		select {
		case <-poll.C:
			s.checkHandOff()
		case <-changed:
			s.checkHandOff()
		case <-stop:
			return
		}
	}
}

// handoffIdlePoll is how often a session whose store tells of changes to
// its hand-over key reads it anyway (a change the store could not see).
// Each idle host wakes for it: long, as the lease watchdog's period on a
// store that tells of changes (fsstore's notifiedPoll).
const handoffIdlePoll = 10 * time.Minute
