package natsstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"looprig/rig/storage"
)

// The catalog lives in the P-catalog bucket. NATS revisions are stream
// sequences shared by every key, while storage.KV revisions count the Puts
// of one key from 1 (and start over after a delete), so each value carries
// its own revision in a small envelope:
//
//	byte 0      envelope version (1)
//	bytes 1..8  revision, big-endian
//	bytes 9..   the value
//
// Compare-and-swap uses both: the envelope's revision is what callers
// compare, and the NATS revision the Get returned makes the write
// conditional (Update with the last revision, Create for an absent key).
const (
	envVersion = 1
	envHeader  = 9
	casRetries = 64
)

func envelope(rev uint64, value []byte) []byte {
	b := make([]byte, envHeader, envHeader+len(value))
	b[0] = envVersion
	binary.BigEndian.PutUint64(b[1:], rev)
	return append(b, value...)
}

// kvEntry is a catalog key's current state.
type kvEntry struct {
	rev     uint64 // storage revision, 0 when absent
	natsRev uint64
	value   []byte
}

func (s *Store) kvGet(ctx context.Context, key string) (kvEntry, error) {
	e, err := s.catalog.Get(ctx, encodeName(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return kvEntry{}, nil
	}
	if err != nil {
		return kvEntry{}, ctxErr(ctx, fmt.Errorf("natsstore: get %q: %w", key, err))
	}
	v := e.Value()
	if len(v) < envHeader || v[0] != envVersion {
		return kvEntry{}, &storage.CorruptError{Name: key, Offset: -1, Reason: "catalog value without a revision envelope"}
	}
	rev := binary.BigEndian.Uint64(v[1:envHeader])
	if rev == 0 {
		return kvEntry{}, &storage.CorruptError{Name: key, Offset: -1, Reason: "catalog value at revision 0"}
	}
	return kvEntry{rev: rev, natsRev: e.Revision(), value: v[envHeader:]}, nil
}

// Get implements storage.KV.
func (s *Store) Get(ctx context.Context, key string) (storage.Entry, error) {
	if err := storage.ValidateName(key); err != nil {
		return storage.Entry{}, err
	}
	if err := ctx.Err(); err != nil {
		return storage.Entry{}, err
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	e, err := s.kvGet(octx, key)
	if err != nil {
		return storage.Entry{}, err
	}
	if e.rev == 0 {
		return storage.Entry{}, &storage.NotFoundError{Key: key}
	}
	return storage.Entry{Key: key, Value: slices.Clone(e.value), Revision: e.rev}, nil
}

// isCASFailure reports a KV write refused by its revision check.
func isCASFailure(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || isWrongLast(err)
}

// Put implements storage.KV.
func (s *Store) Put(ctx context.Context, key string, value []byte, expected uint64) (uint64, error) {
	if err := storage.ValidateName(key); err != nil {
		return 0, err
	}
	if len(value) > storage.MaxPayload {
		return 0, &storage.PayloadTooLargeError{Name: key, Size: len(value), Max: storage.MaxPayload}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	k := encodeName(key)
	for range casRetries {
		cur, err := s.kvGet(octx, key)
		if err != nil {
			return 0, err
		}
		switch {
		case expected == storage.AnyRevision:
		case cur.rev != expected:
			return 0, &storage.ConflictError{Name: key, Expected: expected, Actual: cur.rev}
		}
		next := cur.rev + 1
		if cur.rev == 0 {
			_, err = s.catalog.Create(octx, k, envelope(next, value))
		} else {
			_, err = s.catalog.Update(octx, k, envelope(next, value), cur.natsRev)
		}
		switch {
		case err == nil:
			return next, nil
		case isCASFailure(err):
			continue // changed since we looked: look again
		default:
			return 0, ctxErr(ctx, fmt.Errorf("natsstore: put %q: %w", key, err))
		}
	}
	return 0, fmt.Errorf("natsstore: put %q: gave up after %d concurrent changes", key, casRetries)
}

// DeleteKey implements storage.KV.
func (s *Store) DeleteKey(ctx context.Context, key string, expected uint64) error {
	if err := storage.ValidateName(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	k := encodeName(key)
	for range casRetries {
		cur, err := s.kvGet(octx, key)
		if err != nil {
			return err
		}
		if cur.rev == 0 {
			if expected == storage.AnyRevision || expected == storage.MustNotExist {
				return nil
			}
			return &storage.ConflictError{Name: key, Expected: expected, Actual: 0}
		}
		if expected != storage.AnyRevision && expected != cur.rev {
			return &storage.ConflictError{Name: key, Expected: expected, Actual: cur.rev}
		}
		err = s.catalog.Delete(octx, k, jetstream.LastRevision(cur.natsRev))
		switch {
		case err == nil:
			return nil
		case isCASFailure(err):
			continue
		default:
			return ctxErr(ctx, fmt.Errorf("natsstore: delete key %q: %w", key, err))
		}
	}
	return fmt.Errorf("natsstore: delete key %q: gave up after %d concurrent changes", key, casRetries)
}

// Keys implements storage.KV. It reads the bucket's keys under the
// prefix's complete segments (headers only) and filters the rest here.
func (s *Store) Keys(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	filter, ok := keysFilter(prefix)
	if !ok {
		return nil, nil
	}
	return s.listKeys(ctx, s.catalog, filter, prefix)
}

func (s *Store) listKeys(ctx context.Context, kv jetstream.KeyValue, filter, prefix string) ([]string, error) {
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	w, err := kv.WatchFiltered(octx, []string{filter}, jetstream.IgnoreDeletes(), jetstream.MetaOnly())
	if err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("natsstore: list keys: %w", err))
	}
	defer w.Stop()
	var keys []string
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, ctxErr(ctx, errors.New("natsstore: list keys: the listing stopped early"))
			}
			if e == nil { // every current key has been seen
				slices.Sort(keys)
				return slices.Compact(keys), nil
			}
			if k := decodeName(e.Key()); strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		case <-octx.Done():
			return nil, ctxErr(ctx, fmt.Errorf("natsstore: list keys: %w", octx.Err()))
		}
	}
}
