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
	"strconv"
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
// took them over meanwhile (see DeleteBlob); DeleteBlobs runs that
// protocol for many blobs at once. TouchBlob renews a blob as a put of
// content already stored does. GetBlob reads the chunks through an ordered
// pull consumer, a few at a time; GetBlobRange starts one at the chunk
// holding the range's first byte.
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

// fillingReader reads until p is full or the content ends: the object
// store makes a chunk of each Read, and a reader that yields little at a
// time (a pipe) would make many small chunks.
type fillingReader struct{ r io.Reader }

func (f fillingReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := f.r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
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
	}, fillingReader{hr})
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
		switch err := s.publishBlobMeta(ctx, name, meta, seq); {
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

// publishBlobMeta publishes meta as the meta message of name, rolling up
// the ones before, if the last one is still seq (0: there is none): else
// the error is one isWrongLast reports.
func (s *Store) publishBlobMeta(ctx context.Context, name string, meta jetstream.ObjectInfo, seq uint64) error {
	meta.ModTime = time.Time{}
	data, err := json.Marshal(&meta)
	if err != nil {
		return err
	}
	m := nats.NewMsg(s.blobMetaSubj(name))
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	m.Data = data
	_, err = s.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(seq), jetstream.WithRetryAttempts(0))
	return err
}

// TouchBlob implements storage.BlobStore. It publishes blob d's meta
// message again, unchanged, with the compare-and-swap a put of content
// already stored renews it with (see commitBlob): a DeleteBlob that read
// the meta before either purges it first, and the swap fails (the blob is
// then absent, *storage.BlobNotFoundError), or finds the renewed meta
// naming the same chunks and leaves them. Modified is when the renewal
// was acknowledged, as PutBlob's is; StatBlob and ListBlobs then report
// the server's time of the new meta message.
func (s *Store) TouchBlob(ctx context.Context, d storage.Digest) (storage.BlobInfo, error) {
	if err := ctx.Err(); err != nil {
		return storage.BlobInfo{}, blobErr(ctx, "touch blob", d, err)
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	name := d.String()
	for range casRetries {
		seq, cur, err := s.blobMeta(octx, name)
		if err != nil {
			return storage.BlobInfo{}, blobErr(ctx, "touch blob", d, err)
		}
		if cur == nil {
			return storage.BlobInfo{}, &storage.BlobNotFoundError{Digest: d}
		}
		switch err := s.publishBlobMeta(octx, name, *cur, seq); {
		case isWrongLast(err):
			continue // changed since we looked: look again
		case err != nil:
			return storage.BlobInfo{}, blobErr(ctx, "touch blob", d, err)
		}
		return storage.BlobInfo{Digest: d, Size: int64(cur.Size), Modified: time.Now()}, nil
	}
	return storage.BlobInfo{}, blobErr(ctx, "touch blob", d, fmt.Errorf("gave up after %d concurrent changes", casRetries))
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
	r := &chunkReader{s: s, ctx: ctx, d: d, info: info, end: info.Chunks}
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

// GetBlobRange implements storage.BlobStore. It reads only the chunks
// that hold the range, from the one holding offset: it finds that chunk's
// stream sequence by reading the headers of the chunks before it (their
// stream sequences, not their content; see chunkSeq), then starts an
// ordered consumer there that asks for no chunk past the range. The
// reader reads under ctx, as GetBlob's does.
func (s *Store) GetBlobRange(ctx context.Context, d storage.Digest, offset, length int64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, blobErr(ctx, "get blob range", d, err)
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	_, info, err := s.blobMeta(octx, d.String())
	if err != nil {
		return nil, blobErr(ctx, "get blob range", d, err)
	}
	if info == nil {
		return nil, &storage.BlobNotFoundError{Digest: d}
	}
	if err := storage.CheckRange(d, int64(info.Size), offset, length, ""); err != nil {
		return nil, fmt.Errorf("natsstore: get blob range: %w", err)
	}
	if length == 0 {
		return storage.RangeReader(io.NopCloser(strings.NewReader("")), d, offset, 0, ""), nil
	}
	first, last, startSeq, skip, err := s.chunkSpan(ctx, d, info, offset, length)
	if err != nil {
		return nil, blobErr(ctx, "get blob range", d, err)
	}
	r := &chunkReader{s: s, ctx: ctx, d: d, info: info, got: first, end: last + 1, ranged: true, startSeq: startSeq, skip: skip}
	if err := r.start(); err != nil {
		return nil, blobErr(ctx, "get blob range", d, err)
	}
	return storage.RangeReader(r, d, offset, length, ""), nil
}

// chunkSeqBatch is how many chunk headers chunkSpan asks for at once.
const chunkSeqBatch = 1024

// chunkSpan finds the chunks of the object info describes, blob d, that
// hold length bytes (at least 1) from offset: the first and the last
// (from 0), the stream sequence of the first (0 when it is the object's
// first) and how many bytes of it come before offset. Chunks are the
// messages of the object's chunk subject, in order, among the messages of
// every other subject, and are not all of one size (a put from a reader
// that yields little at a time made small ones), so they are found by
// their sizes: an ordered consumer delivers their headers only (no
// content; the server adds each message's size), chunkSeqBatch at a time,
// up to the last chunk of the range. This takes the store's WithTimeout
// at most.
func (s *Store) chunkSpan(ctx context.Context, d storage.Digest, info *jetstream.ObjectInfo, offset, length int64) (first, last uint32, startSeq uint64, skip int, err error) {
	if offset == 0 && length == int64(info.Size) {
		return 0, info.Chunks - 1, 0, 0, nil
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	cons, err := s.js.OrderedConsumer(octx, "OBJ_"+s.blobBucket, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{s.blobChunkSubj(info.NUID)},
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		HeadersOnly:       true,
		InactiveThreshold: chunkSeqIdle,
	})
	if err != nil {
		return 0, 0, 0, 0, err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(int(min(info.Chunks, chunkSeqBatch))), jetstream.StopAfter(int(info.Chunks)))
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer it.Stop()
	corrupt := func(reason string) error {
		return &storage.CorruptError{Name: storage.BlobName(d), Offset: -1, Reason: reason}
	}
	var at int64 // where chunk n starts
	found := false
	for n := uint32(0); n < info.Chunks; n++ {
		msg, err := s.nextChunk(octx, it, d, info, n)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		md, err := msg.Metadata()
		if err != nil {
			return 0, 0, 0, 0, err
		}
		// Counting is right only if every chunk is there, and no other.
		if stored := uint64(n) + 1 + md.NumPending; stored != uint64(info.Chunks) {
			return 0, 0, 0, 0, corrupt(fmt.Sprintf("%d chunks stored, its meta counts %d", stored, info.Chunks))
		}
		size, err := strconv.ParseInt(msg.Headers().Get(nats.MsgSize), 10, 64)
		if err != nil || size <= 0 {
			return 0, 0, 0, 0, corrupt(fmt.Sprintf("chunk %d of %d: no size (%q)", n+1, info.Chunks, msg.Headers().Get(nats.MsgSize)))
		}
		if !found && offset < at+size {
			found, first, skip = true, n, int(offset-at)
			if n > 0 {
				startSeq = md.Sequence.Stream
			}
		}
		if found && offset+length <= at+size {
			return first, n, startSeq, skip, nil
		}
		at += size
	}
	return 0, 0, 0, 0, corrupt(fmt.Sprintf("its %d chunks hold %d bytes, short of its %d", info.Chunks, at, info.Size))
}

// chunkSeqIdle is how long the server keeps the consumer of a chunkSeq
// that was not stopped cleanly.
const chunkSeqIdle = 10 * time.Second

// chunkReader yields an object's chunks in order, asking for blobPrefetch
// at a time: all of them (GetBlob), or chunks got to end-1 of them, the
// first from skip on (GetBlobRange).
type chunkReader struct {
	s    *Store
	ctx  context.Context
	d    storage.Digest
	info *jetstream.ObjectInfo
	it   jetstream.MessagesContext
	got  uint32 // chunks read, or skipped before startSeq
	end  uint32 // the chunk to stop before
	buf  []byte
	err  error

	// A range: the stream sequence of chunk got (0: from the first), the
	// bytes of the first chunk read to leave out.
	ranged   bool
	startSeq uint64
	skip     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for len(r.buf) == 0 {
		if r.got >= r.end {
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
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{r.s.blobChunkSubj(r.info.NUID)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if r.startSeq != 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, r.startSeq
	}
	cons, err := r.s.js.OrderedConsumer(r.ctx, "OBJ_"+r.s.blobBucket, cfg)
	if err != nil {
		return err
	}
	// No more chunks than are read: a small range costs no prefetch.
	want := int(r.end - r.got)
	it, err := cons.Messages(jetstream.PullMaxMessages(min(blobPrefetch, want)), jetstream.StopAfter(want))
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
	msg, err := r.s.nextChunk(r.ctx, r.it, r.d, r.info, r.got)
	if err != nil {
		return err
	}
	r.buf = msg.Data()
	if r.skip > 0 {
		if len(r.buf) < r.skip {
			return &storage.CorruptError{Name: storage.BlobName(r.d), Offset: -1,
				Reason: fmt.Sprintf("its last chunk, %d of %d, holds %d bytes, short of the range", r.got+1, r.info.Chunks, len(r.buf))}
		}
		r.buf, r.skip = r.buf[r.skip:], 0
	}
	r.got++
	md, err := msg.Metadata()
	if err != nil {
		return err
	}
	if r.ranged && uint64(r.got)+md.NumPending != uint64(r.info.Chunks) {
		// A range is not verified: a missing or extra chunk would shift
		// the bytes under it.
		return &storage.CorruptError{Name: storage.BlobName(r.d), Offset: -1,
			Reason: fmt.Sprintf("%d chunks stored, its meta counts %d", uint64(r.got)+md.NumPending, r.info.Chunks)}
	}
	if md.NumPending == 0 && r.got < r.end {
		// The last chunk there is not the last one the meta counts: the
		// content is short. io.EOF lets the verifying reader say so.
		r.end = r.got
	}
	return nil
}

// nextChunk returns the next message of it, chunk n (from 0) of blob d,
// whose meta is info. It waits the WithTimeout of the store at most,
// looking every blobPoll whether the blob is still the one being read: a
// delete purges the chunks, which then never come.
func (s *Store) nextChunk(ctx context.Context, it jetstream.MessagesContext, d storage.Digest, info *jetstream.ObjectInfo, n uint32) (jetstream.Msg, error) {
	deadline := time.Now().Add(s.o.timeout)
	for {
		wait := time.Now().Add(blobPoll)
		if wait.After(deadline) {
			wait = deadline
		}
		wctx, cancel := context.WithDeadline(ctx, wait)
		m, err := it.Next(jetstream.NextContext(wctx))
		cancel()
		if err == nil {
			return m, nil
		}
		if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		octx, cancel := s.opCtx(ctx)
		_, cur, merr := s.blobMeta(octx, d.String())
		cancel()
		switch {
		case merr == nil && (cur == nil || cur.NUID != info.NUID):
			return nil, fmt.Errorf("deleted while it was read: %w", &storage.BlobNotFoundError{Digest: d})
		case time.Now().After(deadline):
			return nil, fmt.Errorf("chunk %d of %d did not come within %v: %w", n+1, info.Chunks, s.o.timeout, err)
		}
	}
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
	_, _, err := s.deleteBlob(ctx, d, time.Time{})
	return err
}

// deleteParallel is how many blobs DeleteBlobs deletes at once.
const deleteParallel = 16

// DeleteBlobs implements storage.BlobStore: DeleteBlob of each blob whose
// meta message is older than cutoff, deleteParallel at once. The time is
// that of the meta message DeleteBlob purges only if it is still the
// last one, so a renewal after the check keeps the blob. The first error
// stops it: the deletes in progress finish.
func (s *Store) DeleteBlobs(ctx context.Context, ds []storage.Digest, cutoff time.Time) ([]storage.BlobInfo, error) {
	var none storage.Digest
	if err := ctx.Err(); err != nil {
		return nil, blobErr(ctx, "delete blobs", none, err)
	}
	seen := make(map[storage.Digest]bool, len(ds))
	todo := make([]storage.Digest, 0, len(ds))
	for _, d := range ds {
		if !seen[d] {
			seen[d] = true
			todo = append(todo, d)
		}
	}
	return storage.DeleteInParallel(len(todo), deleteParallel, func(i int) ([]storage.BlobInfo, error) {
		if err := ctx.Err(); err != nil {
			return nil, blobErr(ctx, "delete blobs", none, err)
		}
		info, ok, err := s.deleteBlob(ctx, todo[i], cutoff)
		if ok {
			return []storage.BlobInfo{info}, err
		}
		return nil, err
	})
}

// deleteBlob is DeleteBlob of d if its meta message's time is before
// cutoff (whatever it is when cutoff is zero). removed reports whether it
// removed the blob, whose information is info. A meta message that
// describes no object (unreadable, a deletion marker) is purged too, as
// DeleteBlob always did, but is no blob removed. Once the meta is
// purged, its chunks are purged even when ctx is done meanwhile, so as
// not to leave them behind.
func (s *Store) deleteBlob(ctx context.Context, d storage.Digest, cutoff time.Time) (info storage.BlobInfo, removed bool, err error) {
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	name := d.String()
	seq, meta, err := s.blobMeta(octx, name)
	if err != nil {
		return info, false, blobErr(ctx, "delete blob", d, err)
	}
	if seq == 0 || meta != nil && !cutoff.IsZero() && !meta.ModTime.Before(cutoff) {
		return info, false, nil
	}
	if err := s.blobStream.Purge(octx, jetstream.WithPurgeSubject(s.blobMetaSubj(name)), jetstream.WithPurgeSequence(seq+1)); err != nil {
		return info, false, blobErr(ctx, "delete blob", d, err)
	}
	if meta == nil {
		return info, false, nil
	}
	cctx, ccancel := s.opCtx(context.WithoutCancel(ctx))
	defer ccancel()
	_, now, err := s.blobMeta(cctx, name)
	if err != nil {
		return info, false, blobErr(ctx, "delete blob", d, err)
	}
	if now != nil && now.NUID == meta.NUID {
		return info, false, nil // renewed meanwhile
	}
	info = storage.BlobInfo{Digest: d, Size: int64(meta.Size), Modified: meta.ModTime}
	if err := s.blobStream.Purge(cctx, jetstream.WithPurgeSubject(s.blobChunkSubj(meta.NUID))); err != nil {
		return info, true, blobErr(ctx, "delete blob", d, fmt.Errorf("purge its chunks: %w", err))
	}
	return info, true, nil
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
