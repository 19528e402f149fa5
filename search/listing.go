package search

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"looprig/rig/storage"
)

// The listing a search catches up with. Listing a store's sessions reads
// every lease (an epoch file and a probe each on a directory store: 14 ms
// at 1,000 sessions, a third of a word search from the command line).
// The index keeps the last listing with the store's durable stamp taken
// before it (storage.DurableStamper); while the stamp stands still, no
// session was created, deleted, taken, released or broken since, and the
// kept listing is the listing. A session held then may have grown since
// (appends move no stamp): Update reads its tip as it would have. One
// whose holder died since is still held in the kept listing, which costs
// a tip read, not a line.

// keyListing is the meta key of the kept listing.
var keyListing = []byte("listing")

// listingTrustedFor bounds how long a kept listing is used while the
// stamp stands still: a change made by a process that died half-way
// through it may leave the stamp where it was (storage.DurableStamper).
const listingTrustedFor = time.Hour

// Sessions returns the store's sessions for Update and Find: the listing
// the index kept from an earlier call while the store's durable stamp
// says nothing it lists changed since, else list's, which it keeps. A
// store without durable stamps is listed every time.
func (ix *Index) Sessions(ctx context.Context, list func(context.Context) ([]Session, error)) ([]Session, error) {
	ds, ok := ix.store.(storage.DurableStamper)
	if !ok {
		return list(ctx)
	}
	// The stamp is taken before the listing: a change during it moves
	// the stamp, and the next search lists again.
	stamp, ok, err := ds.DurableStamp(ctx)
	if err != nil || !ok {
		return list(ctx)
	}
	if sessions, ok := ix.keptListing(stamp, time.Now()); ok {
		return sessions, nil
	}
	sessions, err := list(ctx)
	if err != nil {
		return nil, err
	}
	// A hint: when it cannot be kept, the next search lists.
	_ = ix.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyListing, encodeListing(stamp, time.Now(), sessions))
	})
	return sessions, nil
}

// keptListing is the kept listing when it was taken at stamp less than
// listingTrustedFor before now.
func (ix *Index) keptListing(stamp string, now time.Time) (sessions []Session, ok bool) {
	_ = ix.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketMeta).Get(keyListing)
		if v == nil {
			return nil
		}
		kept, at, ses, err := decodeListing(v)
		if err == nil && kept == stamp && now.Sub(at) < listingTrustedFor && !at.After(now) {
			sessions, ok = ses, true
		}
		return nil
	})
	return sessions, ok
}

// errBadListing: a kept listing that does not decode (listed again).
var errBadListing = errors.New("bad kept listing")

// encodeListing is stamp, at and sessions as the index keeps them: the
// stamp (length and bytes), at in Unix milliseconds, the count, then per
// session its id, epoch and whether it was unheld.
func encodeListing(stamp string, at time.Time, sessions []Session) []byte {
	b := binary.AppendUvarint(nil, uint64(len(stamp)))
	b = append(b, stamp...)
	b = binary.AppendVarint(b, at.UnixMilli())
	b = binary.AppendUvarint(b, uint64(len(sessions)))
	for _, s := range sessions {
		b = append(b, s.ID[:]...)
		b = binary.AppendUvarint(b, s.Epoch)
		unheld := byte(0)
		if s.Unheld {
			unheld = 1
		}
		b = append(b, unheld)
	}
	return b
}

// decodeListing reverses encodeListing.
func decodeListing(b []byte) (stamp string, at time.Time, sessions []Session, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", at, nil, errBadListing
	}
	stamp, b = string(b[k:k+int(n)]), b[k+int(n):]
	ms, k := binary.Varint(b)
	if k <= 0 {
		return "", at, nil, errBadListing
	}
	at, b = time.UnixMilli(ms), b[k:]
	count, k := binary.Uvarint(b)
	// Each session takes 18 bytes at least.
	if k <= 0 || count > uint64(len(b)-k)/18 {
		return "", at, nil, errBadListing
	}
	b = b[k:]
	sessions = make([]Session, 0, count)
	for range count {
		if len(b) < len(uuid.UUID{}) {
			return "", at, nil, errBadListing
		}
		var s Session
		copy(s.ID[:], b)
		b = b[len(s.ID):]
		if s.Epoch, k = binary.Uvarint(b); k <= 0 || k >= len(b) || b[k] > 1 {
			return "", at, nil, errBadListing
		}
		s.Unheld, b = b[k] == 1, b[k+1:]
		sessions = append(sessions, s)
	}
	if len(b) != 0 {
		return "", at, nil, errBadListing
	}
	return stamp, at, sessions, nil
}
