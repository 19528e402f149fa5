package rig

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// silentHolderStore is a store whose lease probes take as long as a probe
// of a holder that does not answer (a stopped process on NATS: its
// presence is silent, and the probe waits for its replies in vain), and
// find the lease held at epoch 1.
type silentHolderStore struct {
	*memstore.Store
	slow   time.Duration
	probes atomic.Int32
}

func (s *silentHolderStore) Probe(ctx context.Context, name string) (storage.LeaseStatus, error) {
	s.probes.Add(1)
	select {
	case <-time.After(s.slow):
	case <-ctx.Done():
		return storage.LeaseStatus{}, ctx.Err()
	}
	return storage.LeaseStatus{Name: name, Held: true, Epoch: 1, Holder: storage.Holder{PID: 1, Host: "holder"}}, nil
}

// A holder that does not answer, whose every look takes longer than the
// wait and than a poll: AwaitHandOff gives up after one look, whatever
// select would pick among the deadline and the tick ready together. Before,
// it looked again at every pick of the tick (one time in two), running
// past its timeout by as many looks, and past the lease's expiry of a
// stopped holder: take then took the session after all.
func TestAwaitHandOffGivesUpAtItsDeadline(t *testing.T) {
	for range 8 {
		store := &silentHolderStore{Store: memstore.New(), slow: handOffPoll + 50*time.Millisecond}
		req := HandOffRequest{To: "2@taker", Epoch: 1, At: time.Now().UTC()}
		_, err := AwaitHandOff(t.Context(), store, uuid.New(), storage.Holder{PID: 1, Host: "holder"}, req, 20*time.Millisecond)
		var timeout *HandOffTimeoutError
		if !errors.As(err, &timeout) {
			t.Fatalf("AwaitHandOff of a silent holder: %v, want *HandOffTimeoutError", err)
		}
		if n := store.probes.Load(); n != 1 {
			t.Fatalf("AwaitHandOff looked at the lease %d times, want once: its deadline had passed by the end of the first look", n)
		}
	}
}
