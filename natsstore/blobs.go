package natsstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"looprig/rig/storage"
)

// Blobs (storage.BlobStore) live in the JetStream Object Store bucket
// P-blobs, one object per blob named by its digest's 64 hex characters.
//
// An object store object is a meta message (JSON jetstream.ObjectInfo: size,
// chunk count, the NUID naming its chunks, the store's own SHA-256) on
// subject $O.<bucket>.M.<base64url(name)>, the last one per subject kept
// (Nats-Rollup: sub), and its content in chunk messages on
// $O.<bucket>.C.<NUID>. An object is visible only once its meta message is
// there, and the meta is published after every chunk was acknowledged.
//
// PutBlob cannot know the digest, hence the name, before it has read
// everything, and the Object Store API has no rename that is safe under
// concurrency (UpdateMeta checks, then publishes: two puts of the same
// content would both "win", one leaking its chunks, and a renewal racing a
// delete could publish a meta whose chunks were just purged). So:
//
//  1. jetstream.ObjectStore.Put streams the content, hashing it as it goes,
//     under a temporary name (tmpBlobPrefix + a NUID) in chunks of
//     blobChunkSize: memory stays bounded, nothing is spooled to disk, the
//     content crosses the network once.
//  2. The temporary meta message is purged: its chunks are now referenced
//     by nothing (a crash here leaves unreferenced chunks, never an object).
//  3. The meta of the digest's name is written with a compare-and-swap
//     (Nats-Expected-Last-Subject-Sequence on that meta subject):
//     - absent (or deleted, or inconsistent with the name): a meta naming
//     our chunks, so the blob appears whole at once, under a name its
//     content hashes to;
//     - present: the same meta published again, which renews its time
//     (an object's ModTime is its meta message's timestamp), and our
//     chunks are purged.
//     A concurrent change to that subject fails the swap; the step is
//     taken again on what is there now.
//
// So a crashed put leaves at worst a temporary object (listed by nothing,
// see ListBlobs) or unreferenced chunks, and never an object under a digest
// name that it does not hash to. DeleteBlob removes the meta first, only if
// it is still the one it read, and purges the chunks only when no renewal
// took them over meanwhile (see DeleteBlob). GetBlob reads the chunks
// through an ordered pull consumer, a few at a time.
//
// Meta messages are read with the stream's direct gets (the object store
// turns them on): with WithReplicas above 1 a read may be served by a
// replica that has not yet seen the latest put or delete, unlike ledger
// reads. The compare-and-swaps are decided by the leader, so a stale read
// only costs a retry; a StatBlob or GetBlob may briefly miss a new blob.
const (
	tmpBlobPrefix = "tmp-"
	blobChunkSize = 128 << 10
	blobPrefetch  = 16 // chunks a reader asks for at once (2 MiB)
	blobPoll      = 250 * time.Millisecond
)

var _ storage.BlobStore = (*Store)(nil)

// setupBlobs finds or creates the P-blobs object store.
func (s *Store) setupBlobs(ctx context.Context) error {
	name := s.prefix + "-blobs"
	obs, err := s.js.ObjectStore(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = s.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: name, Description: "looprig blobs: content-addressed, named by SHA-256",
			Storage: jetstream.FileStorage, Replicas: s.o.replicas,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			obs, err = s.js.ObjectStore(ctx, name)
		}
	}
	if err != nil {
		return fmt.Errorf("natsstore: object store %s: %w", name, err)
	}
	st, err := s.js.Stream(ctx, "OBJ_"+name)
	if err != nil {
		return fmt.Errorf("natsstore: object store %s: %w", name, err)
	}
	if got := st.CachedInfo().Config; got.Storage != jetstream.FileStorage || !got.AllowRollup ||
		got.MaxAge > 0 || got.MaxBytes > 0 || got.MaxMsgs > 0 || got.MaxMsgsPerSubject > 0 || got.Sealed {
		return &UnavailableError{URL: s.url, Reason: fmt.Sprintf("object store %s exists with a configuration natsstore cannot use "+
			"(it needs file storage, rollups, no limits and no TTL: blobs must not expire)", name),
			Fix: "use another prefix, or fix or remove the object store"}
	}
	s.blobs, s.blobStream, s.blobBucket = obs, st, name
	return nil
}

func (s *Store) blobMetaSubj(name string) string {
	return "$O." + s.blobBucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
}

func (s *Store) blobChunkSubj(nuid string) string {
	return "$O." + s.blobBucket + ".C." + nuid
}

// objectDigest is d as the object store writes its own digest.
func objectDigest(d storage.Digest) string {
	return "SHA-256=" + base64.URLEncoding.EncodeToString(d[:])
}

// blobErr wraps err for op on blob d (zero: no blob), reporting a done
// ctx as such.
func blobErr(ctx context.Context, op string, d storage.Digest, err error) error {
	if d.IsZero() {
		return ctxErr(ctx, fmt.Errorf("natsstore: %s: %w", op, err))
	}
	return ctxErr(ctx, fmt.Errorf("natsstore: %s %s: %w", op, d, err))
}

// hashingReader hashes and counts what it reads, and keeps r's error, so
// that a failed put reports the reader's error rather than the store's.
type hashingReader struct {
	r   io.Reader
	h   hash.Hash
	n   int64
	err error
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	if err != nil && err != io.EOF {
		h.err = err
	}
	return n, err
}

// PutBlob implements storage.BlobStore; see the comment at the top of this
// file. The upload runs under ctx alone (not bounded by WithTimeout, as a
// large blob takes long): each chunk's acknowledgement is awaited for at
// most the JetStream default timeout when ctx has no deadline.
func (s *Store) PutBlob(ctx context.Context, r io.Reader) (storage.BlobInfo, error) {
	var none storage.Digest
	if err := ctx.Err(); err != nil {
		return storage.BlobInfo{}, blobErr(ctx, "put blob", none, err)
	}
	hr := &hashingReader{r: r, h: sha256.New()}
	tmp, err := s.blobs.Put(ctx, jetstream.ObjectMeta{
		Name: tmpBlobPrefix + nuid.Next(),
		Opts: &jetstream.ObjectMetaOptions{ChunkSize: blobChunkSize},
	}, hr)
	if hr.err != nil {
		// Put purged the chunks it had sent.
		return storage.BlobInfo{}, fmt.Errorf("natsstore: put blob: reading the content: %w", hr.err)
	}
	if err != nil {
		return storage.BlobInfo{}, blobErr(ctx, "put blob", none, err)
	}
	var d storage.Digest
	hr.h.Sum(d[:0])
	// From here on the temporary object or its chunks must not be left
	// behind, even when ctx is done: clean up under a context of our own.
	cctx, cancel := s.opCtx(context.WithoutCancel(ctx))
	defer cancel()
	purgeChunks := func() { _ = s.blobStream.Purge(cctx, jetstream.WithPurgeSubject(s.blobChunkSubj(tmp.NUID))) }
	if tmp.Digest != objectDigest(d) || int64(tmp.Size) != hr.n {
		_ = s.blobs.Delete(cctx, tmp.Name)
		return storage.BlobInfo{}, fmt.Errorf("natsstore: put blob: the object store stored %d bytes (%s), we read %d (%s)",
			tmp.Size, tmp.Digest, hr.n, objectDigest(d))
	}
	// Step 2: forget the temporary name; the chunks are ours alone now.
	if err := s.blobStream.Purge(cctx, jetstream.WithPurgeSubject(s.blobMetaSubj(tmp.Name))); err != nil {
		purgeChunks()
		return storage.BlobInfo{}, blobErr(ctx, "put blob", d, fmt.Errorf("drop the temporary object: %w", err))
	}
	octx, ocancel := s.opCtx(ctx)
	defer ocancel()
	kept, err := s.commitBlob(octx, d, tmp)
	if err != nil || !kept {
		purgeChunks()
	}
	if err != nil {
		return storage.BlobInfo{}, blobErr(ctx, "put blob", d, err)
	}
	return storage.BlobInfo{Digest: d, Size: hr.n, Modified: time.Now()}, nil
}

// blobMeta reads the last meta message of name: its stream sequence (0 if
// none) and the object it describes (nil when there is none, it is a
// deletion marker, or it cannot be parsed).
func (s *Store) blobMeta(ctx context.Context, name string) (uint64, *jetstream.ObjectInfo, error) {
	raw, err := s.blobStream.GetLastMsgForSubject(ctx, s.blobMetaSubj(name))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	var info jetstream.ObjectInfo
	if json.Unmarshal(raw.Data, &info) != nil || info.Deleted || info.NUID == "" {
		return raw.Sequence, nil, nil
	}
	info.ModTime = raw.Time
	return raw.Sequence, &info, nil
}

// commitBlob is step 3 of a put: it makes the object named d.String() the
// one whose chunks tmp describes, or renews the one already there. kept
// reports whether tmp's chunks are now the blob's.
func (s *Store) commitBlob(ctx context.Context, d storage.Digest, tmp *jetstream.ObjectInfo) (kept bool, err error) {
	name := d.String()
	for range casRetries {
		seq, cur, err := s.blobMeta(ctx, name)
		if err != nil {
			return false, err
		}
		// A meta that does not describe content hashing to its name (a
		// damaged or foreign object) is replaced, as an absent one is.
		valid := cur != nil && cur.Digest == tmp.Digest && cur.Size == tmp.Size &&
			(cur.Opts == nil || cur.Opts.Link == nil)
		var meta jetstream.ObjectInfo
		if valid {
			meta = *cur // put again: the same meta, published anew, renews its time
		} else {
			meta = *tmp
			meta.Name = name
		}
		meta.ModTime = time.Time{}
		data, err := json.Marshal(&meta)
		if err != nil {
			return false, err
		}
		m := nats.NewMsg(s.blobMetaSubj(name))
		m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
		m.Data = data
		_, err = s.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(seq), jetstream.WithRetryAttempts(0))
		switch {
		case isWrongLast(err):
			continue // changed since we looked: look again
		case err != nil:
			return false, err
		}
		if cur != nil && !valid {
			// The replaced object's chunks are no one's now.
			_ = s.blobStream.Purge(ctx, jetstream.WithPurgeSubject(s.blobChunkSubj(cur.NUID)))
		}
		return !valid, nil
	}
	return false, fmt.Errorf("gave up after %d concurrent changes", casRetries)
}

// GetBlob implements storage.BlobStore. The reader reads under ctx; each
// batch of chunks must arrive within the WithTimeout of the store, but the
// whole read has no time limit of its own.
func (s *Store) GetBlob(ctx context.Context, d storage.Digest) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, blobErr(ctx, "get blob", d, err)
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	_, info, err := s.blobMeta(octx, d.String())
	if err != nil {
		return nil, blobErr(ctx, "get blob", d, err)
	}
	if info == nil {
		return nil, &storage.BlobNotFoundError{Digest: d}
	}
	r := &chunkReader{s: s, ctx: ctx, d: d, info: info}
	if info.Chunks > 0 {
		// Start asking at once: the first chunks are on their way while
		// the caller gets ready, and a delete right after the open no
		// longer stops a small blob from being read.
		if err := r.start(); err != nil {
			return nil, blobErr(ctx, "get blob", d, err)
		}
	}
	return storage.VerifyingReader(r, d, int64(info.Size), ""), nil
}

// chunkReader yields an object's chunks in order, asking for blobPrefetch
// at a time.
type chunkReader struct {
	s    *Store
	ctx  context.Context
	d    storage.Digest
	info *jetstream.ObjectInfo
	it   jetstream.MessagesContext
	got  uint32 // chunks read
	buf  []byte
	err  error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for len(r.buf) == 0 {
		if r.got == r.info.Chunks {
			return 0, io.EOF
		}
		if err := r.next(); err != nil {
			r.err = blobErr(r.ctx, "read blob", r.d, err)
			return 0, r.err
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *chunkReader) start() error {
	cons, err := r.s.js.OrderedConsumer(r.ctx, "OBJ_"+r.s.blobBucket, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{r.s.blobChunkSubj(r.info.NUID)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(blobPrefetch))
	if err != nil {
		return err
	}
	r.it = it
	return nil
}

func (r *chunkReader) next() error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if r.it == nil {
		if err := r.start(); err != nil {
			return err
		}
	}
	// A fresh deadline per chunk (WithTimeout): the whole read has no time
	// limit. While waiting, look every blobPoll whether the blob is still
	// the one being read: a delete purges the chunks, which then never come.
	deadline := time.Now().Add(r.s.o.timeout)
	var msg jetstream.Msg
	for {
		wait := time.Now().Add(blobPoll)
		if wait.After(deadline) {
			wait = deadline
		}
		wctx, cancel := context.WithDeadline(r.ctx, wait)
		m, err := r.it.Next(jetstream.NextContext(wctx))
		cancel()
		if err == nil {
			msg = m
			break
		}
		if r.ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		octx, cancel := r.s.opCtx(r.ctx)
		_, cur, merr := r.s.blobMeta(octx, r.d.String())
		cancel()
		switch {
		case merr == nil && (cur == nil || cur.NUID != r.info.NUID):
			return fmt.Errorf("deleted while it was read: %w", &storage.BlobNotFoundError{Digest: r.d})
		case time.Now().After(deadline):
			return fmt.Errorf("chunk %d of %d did not come within %v: %w", r.got+1, r.info.Chunks, r.s.o.timeout, err)
		}
	}
	r.buf = msg.Data()
	r.got++
	if md, err := msg.Metadata(); err == nil && md.NumPending == 0 && r.got < r.info.Chunks {
		// The last chunk there is not the last one the meta counts: the
		// content is short. io.EOF lets the verifying reader say so.
		r.info.Chunks = r.got
	}
	return nil
}

func (r *chunkReader) Close() error {
	if r.it != nil {
		r.it.Stop()
	}
	return nil
}

// StatBlob implements storage.BlobStore. Modified is the server's time of
// the blob's meta message.
func (s *Store) StatBlob(ctx context.Context, d storage.Digest) (storage.BlobInfo, error) {
	if err := ctx.Err(); err != nil {
		return storage.BlobInfo{}, blobErr(ctx, "stat blob", d, err)
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	_, info, err := s.blobMeta(octx, d.String())
	if err != nil {
		return storage.BlobInfo{}, blobErr(ctx, "stat blob", d, err)
	}
	if info == nil {
		return storage.BlobInfo{}, &storage.BlobNotFoundError{Digest: d}
	}
	return storage.BlobInfo{Digest: d, Size: int64(info.Size), Modified: info.ModTime}, nil
}

// DeleteBlob implements storage.BlobStore. It purges the blob's meta
// message only if it is still the one it read (a purge of the subject up
// to that sequence), then purges the chunks unless a put renewed the blob
// in between (which republishes a meta naming the same chunks: the put
// wins, as if it came after the delete). No deletion marker is left.
func (s *Store) DeleteBlob(ctx context.Context, d storage.Digest) error {
	if err := ctx.Err(); err != nil {
		return blobErr(ctx, "delete blob", d, err)
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	name := d.String()
	seq, info, err := s.blobMeta(octx, name)
	if err != nil {
		return blobErr(ctx, "delete blob", d, err)
	}
	if seq == 0 {
		return nil
	}
	if err := s.blobStream.Purge(octx, jetstream.WithPurgeSubject(s.blobMetaSubj(name)), jetstream.WithPurgeSequence(seq+1)); err != nil {
		return blobErr(ctx, "delete blob", d, err)
	}
	if info == nil {
		return nil
	}
	_, now, err := s.blobMeta(octx, name)
	if err != nil {
		return blobErr(ctx, "delete blob", d, err)
	}
	if now != nil && now.NUID == info.NUID {
		return nil // renewed meanwhile
	}
	if err := s.blobStream.Purge(octx, jetstream.WithPurgeSubject(s.blobChunkSubj(info.NUID))); err != nil {
		return blobErr(ctx, "delete blob", d, fmt.Errorf("purge its chunks: %w", err))
	}
	return nil
}

// ListBlobs implements storage.BlobStore. It reads every meta message
// (not the chunks) into a list, then calls fn: fn may take its time and
// call the store. Temporary objects of puts in progress (or crashed) are
// skipped.
func (s *Store) ListBlobs(ctx context.Context, fn func(storage.BlobInfo) error) error {
	var none storage.Digest
	if err := ctx.Err(); err != nil {
		return blobErr(ctx, "list blobs", none, err)
	}
	infos, err := s.listBlobs(ctx)
	if err != nil {
		return blobErr(ctx, "list blobs", none, err)
	}
	for _, in := range infos {
		if err := fn(in); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) listBlobs(ctx context.Context) ([]storage.BlobInfo, error) {
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	w, err := s.blobs.Watch(octx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	var infos []storage.BlobInfo
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("the listing stopped early")
			}
			if e == nil { // every current object has been seen
				return infos, nil
			}
			if strings.HasPrefix(e.Name, tmpBlobPrefix) || e.Opts != nil && e.Opts.Link != nil {
				continue
			}
			d, err := storage.ParseDigest(e.Name)
			if err != nil {
				continue // not a blob
			}
			infos = append(infos, storage.BlobInfo{Digest: d, Size: int64(e.Size), Modified: e.ModTime})
		case <-octx.Done():
			return nil, octx.Err()
		}
	}
}
