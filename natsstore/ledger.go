package natsstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"looprig/rig/storage"
)

// Headers of a ledger message. A message holds Count records, the ledger
// sequences First .. First+Count-1, framed in its body as uvarint length +
// bytes each; Crc32c covers the body. Append names the Append call that
// wrote it, so an Append whose acknowledgement was lost can tell whether it
// landed.
const (
	hdrFirst  = "Looprig-First"
	hdrCount  = "Looprig-Count"
	hdrCRC    = "Looprig-Crc32c"
	hdrAppend = "Looprig-Append"

	hdrExpectedLastSubjSeq = "Nats-Expected-Last-Subject-Sequence"
	hdrBatchID             = "Nats-Batch-Id"
	hdrBatchSeq            = "Nats-Batch-Sequence"
	hdrBatchCommit         = "Nats-Batch-Commit"

	// msgSlack is what a message's headers and framing may add to its
	// payloads, kept free below the server's max_payload.
	msgSlack = 8 << 10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// tipCache is the last message this Store saw of a ledger: its stream
// sequence (the compare-and-swap token; 0 for an empty ledger) and the
// ledger tip it ends at. It is only a hint for the next Append, whose
// compare-and-swap checks it.
type tipCache struct {
	sseq uint64
	tip  uint64
}

// ledgerMsg is one decoded ledger message.
type ledgerMsg struct {
	sseq     uint64
	first    uint64
	count    uint64
	appendID string
	data     []byte
}

func (m *ledgerMsg) last() uint64 { return m.first + m.count - 1 }

func (s *Store) subject(name string) string { return s.ledgerSubj + encodeName(name) }

func (s *Store) cachedTip(name string) (tipCache, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tips[name]
	return t, ok
}

func (s *Store) setTip(name string, t tipCache) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tips) > 4096 {
		clear(s.tips)
	}
	s.tips[name] = t
}

func (s *Store) forgetTip(name string) {
	s.mu.Lock()
	delete(s.tips, name)
	s.mu.Unlock()
}

// parseMsg checks a stored message's headers (not yet its body).
func parseMsg(name string, sseq uint64, hdr nats.Header, data []byte) (*ledgerMsg, error) {
	corrupt := func(reason string) error {
		return &storage.CorruptError{Name: name, Offset: -1, Reason: fmt.Sprintf("ledger message at stream sequence %d: %s", sseq, reason)}
	}
	first, err1 := strconv.ParseUint(hdr.Get(hdrFirst), 10, 64)
	count, err2 := strconv.ParseUint(hdr.Get(hdrCount), 10, 64)
	if err1 != nil || err2 != nil || first == 0 || count == 0 || first+count < first {
		return nil, corrupt("missing or bad " + hdrFirst + "/" + hdrCount + " headers")
	}
	return &ledgerMsg{sseq: sseq, first: first, count: count, appendID: hdr.Get(hdrAppend), data: data}, nil
}

// records decodes m's body, checking its checksum and framing.
func (m *ledgerMsg) records(name string) ([][]byte, error) {
	corrupt := func(reason string) error {
		return &storage.CorruptError{Name: name, Offset: -1, Reason: fmt.Sprintf("ledger message at stream sequence %d (records %d..%d): %s", m.sseq, m.first, m.last(), reason)}
	}
	out := make([][]byte, 0, min(m.count, 1<<16))
	rest := m.data
	for range m.count {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, corrupt("bad record framing")
		}
		rest = rest[k:]
		out = append(out, rest[:n:n])
		rest = rest[n:]
	}
	if len(rest) != 0 {
		return nil, corrupt(fmt.Sprintf("%d bytes after the last record", len(rest)))
	}
	return out, nil
}

func (m *ledgerMsg) checkCRC(name string, hdr nats.Header) error {
	want, err := strconv.ParseUint(hdr.Get(hdrCRC), 16, 32)
	if err != nil || uint32(want) != crc32.Checksum(m.data, castagnoli) {
		return &storage.CorruptError{Name: name, Offset: -1,
			Reason: fmt.Sprintf("ledger message at stream sequence %d (records %d..%d): checksum mismatch", m.sseq, m.first, m.last())}
	}
	return nil
}

// lastMsg returns the last message of a ledger, nil when it has none.
func (s *Store) lastMsg(ctx context.Context, name string) (*ledgerMsg, error) {
	raw, err := s.ledgers.GetLastMsgForSubject(ctx, s.subject(name))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		s.setTip(name, tipCache{})
		return nil, nil
	}
	if err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("natsstore: read the tip of %q: %w", name, err))
	}
	m, err := parseMsg(name, raw.Sequence, raw.Header, raw.Data)
	if err != nil {
		return nil, err
	}
	if err := m.checkCRC(name, raw.Header); err != nil {
		return nil, err
	}
	s.setTip(name, tipCache{sseq: m.sseq, tip: m.last()})
	return m, nil
}

// Tip implements storage.Ledger.
func (s *Store) Tip(ctx context.Context, name string) (uint64, error) {
	octx, cancel, err := s.nameOpCtx(ctx, name)
	if err != nil {
		return 0, err
	}
	defer cancel()
	m, err := s.lastMsg(octx, name)
	if err != nil || m == nil {
		return 0, err
	}
	return m.last(), nil
}

// Append implements storage.Ledger: one message holding every payload,
// published with Nats-Expected-Last-Subject-Sequence set to the stream
// sequence of the ledger's last message (0 for an empty ledger). A batch
// too large for one message becomes an atomic batch publish of several.
func (s *Store) Append(ctx context.Context, name string, expected uint64, payloads ...[]byte) error {
	if err := storage.ValidateName(name); err != nil {
		return err
	}
	for _, p := range payloads {
		if len(p) > storage.MaxPayload {
			return &storage.PayloadTooLargeError{Name: name, Size: len(p), Max: storage.MaxPayload}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	if len(payloads) == 0 {
		m, err := s.lastMsg(octx, name)
		if err != nil {
			return err
		}
		if tip := tipOf(m); tip != expected {
			return &storage.ConflictError{Name: name, Expected: expected, Actual: tip}
		}
		return nil
	}

	chunks := s.frame(payloads, expected)
	appendID := nuid.Next()
	cur, ok := s.cachedTip(name)
	if !ok || cur.tip != expected {
		m, err := s.lastMsg(octx, name)
		if err != nil {
			return err
		}
		if tip := tipOf(m); tip != expected {
			return &storage.ConflictError{Name: name, Expected: expected, Actual: tip}
		}
		cur = tipCache{sseq: sseqOf(m), tip: expected}
	}
	n := uint64(len(payloads))
	for attempt := 1; ; attempt++ {
		sseq, err := s.publish(octx, name, chunks, cur.sseq, appendID)
		s.mu.Lock()
		hook := s.hooks.afterPublish
		s.mu.Unlock()
		if err == nil && hook != nil {
			err = hook()
		}
		if err == nil {
			s.setTip(name, tipCache{sseq: sseq, tip: expected + n})
			return nil
		}
		// Refused, or the outcome is unknown (a lost acknowledgement).
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.timeout)
		landed, m, rerr := s.resolve(rctx, name, cur.sseq, appendID)
		rcancel()
		if rerr != nil {
			var corrupt *storage.CorruptError
			if errors.As(rerr, &corrupt) {
				return rerr
			}
			return ctxErr(ctx, fmt.Errorf("natsstore: append to %q: %w", name, err))
		}
		if landed {
			s.forgetTip(name)
			return nil
		}
		if tip := tipOf(m); tip != expected {
			return &storage.ConflictError{Name: name, Expected: expected, Actual: tip}
		}
		// The tip is still expected, and our message is not there.
		if ctx.Err() != nil || attempt >= 4 {
			return ctxErr(ctx, fmt.Errorf("natsstore: append to %q: %w", name, err))
		}
		if !isWrongLast(err) && !retryable(err) {
			return fmt.Errorf("natsstore: append to %q: %w", name, err)
		}
		// Either the ledger was deleted and refilled to the same tip (the
		// stream sequence moved), or the publish failed in transit: try
		// again against the message that is there now. Should the first
		// try still land, the compare-and-swap refuses this one.
		cur = tipCache{sseq: sseqOf(m), tip: expected}
		if !isWrongLast(err) {
			select {
			case <-octx.Done():
			case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
			}
		}
	}
}

// resolve finds out whether the append appendID, published against the
// ledger's message at stream sequence after, landed: the first message of
// the ledger after that one is the one that won the compare-and-swap, and
// ours carries appendID. When it did not land, resolve returns the
// ledger's last message (nil for an empty ledger).
func (s *Store) resolve(ctx context.Context, name string, after uint64, appendID string) (bool, *ledgerMsg, error) {
	raw, err := s.ledgers.GetMsg(ctx, after+1, jetstream.WithGetMsgSubject(s.subject(name)))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return false, nil, err
	case raw.Header.Get(hdrAppend) == appendID:
		return true, nil, nil
	}
	m, err := s.lastMsg(ctx, name)
	return false, m, err
}

func tipOf(m *ledgerMsg) uint64 {
	if m == nil {
		return 0
	}
	return m.last()
}

func sseqOf(m *ledgerMsg) uint64 {
	if m == nil {
		return 0
	}
	return m.sseq
}

// retryable reports a transport failure after which the publish may or may
// not have reached the stream.
func retryable(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrReconnectBufExceeded) ||
		errors.Is(err, nats.ErrDisconnected)
}

// chunk is the body and record range of one message.
type chunk struct {
	first, count uint64
	body         []byte
}

// frame packs payloads (the records expected+1, ...) into as few messages
// as the server's max_payload allows: usually one.
func (s *Store) frame(payloads [][]byte, expected uint64) []chunk {
	limit := s.maxMsg - msgSlack
	s.mu.Lock()
	if s.hooks.maxMsg > 0 {
		limit = s.hooks.maxMsg - msgSlack
	}
	s.mu.Unlock()
	var out []chunk
	for start := 0; start < len(payloads); {
		end, size := start, 0
		for end < len(payloads) {
			need := uvarintLen(uint64(len(payloads[end]))) + len(payloads[end])
			if end > start && size+need > limit {
				break
			}
			size += need
			end++
		}
		body := make([]byte, 0, size)
		for _, p := range payloads[start:end] {
			body = binary.AppendUvarint(body, uint64(len(p)))
			body = append(body, p...)
		}
		out = append(out, chunk{first: expected + 1 + uint64(start), count: uint64(end - start), body: body})
		start = end
	}
	return out
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// publish writes chunks to name's subject if the subject's last stream
// sequence is expectSeq, and returns the stream sequence of the last one.
func (s *Store) publish(ctx context.Context, name string, chunks []chunk, expectSeq uint64, appendID string) (uint64, error) {
	subj := s.subject(name)
	msgFor := func(c chunk) *nats.Msg {
		m := nats.NewMsg(subj)
		m.Header.Set(hdrFirst, strconv.FormatUint(c.first, 10))
		m.Header.Set(hdrCount, strconv.FormatUint(c.count, 10))
		m.Header.Set(hdrCRC, strconv.FormatUint(uint64(crc32.Checksum(c.body, castagnoli)), 16))
		m.Header.Set(hdrAppend, appendID)
		m.Data = c.body
		return m
	}
	if len(chunks) == 1 {
		m := msgFor(chunks[0])
		ack, err := s.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(expectSeq), jetstream.WithRetryAttempts(0))
		if err != nil {
			return 0, err
		}
		return ack.Sequence, nil
	}
	// An atomic batch: staged by the server, committed by the last message
	// all at once or not at all. The compare-and-swap rides on the first.
	batchID := nuid.Next()
	s.mu.Lock()
	drop := s.hooks.dropBatchMsg
	s.mu.Unlock()
	for i, c := range chunks {
		if i+1 == drop && i < len(chunks)-1 {
			continue
		}
		m := msgFor(c)
		m.Header.Set(hdrBatchID, batchID)
		m.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
		if i == 0 {
			m.Header.Set(hdrExpectedLastSubjSeq, strconv.FormatUint(expectSeq, 10))
		}
		if i < len(chunks)-1 {
			resp, err := s.nc.RequestMsgWithContext(ctx, m)
			if err != nil {
				return 0, err
			}
			if len(resp.Data) > 0 {
				var r struct {
					Error *jetstream.APIError `json:"error"`
				}
				if jerr := json.Unmarshal(resp.Data, &r); jerr != nil || r.Error == nil {
					return 0, fmt.Errorf("unexpected reply to batch message %d: %q", i+1, resp.Data)
				}
				return 0, r.Error
			}
			continue
		}
		m.Header.Set(hdrBatchCommit, "1")
		ack, err := s.js.PublishMsg(ctx, m, jetstream.WithRetryAttempts(0))
		if err != nil {
			return 0, err
		}
		return ack.Sequence, nil
	}
	panic("unreachable")
}

// Delete implements storage.Ledger: the ledger's subject is purged.
func (s *Store) Delete(ctx context.Context, name string) error {
	octx, cancel, err := s.nameOpCtx(ctx, name)
	if err != nil {
		return err
	}
	defer cancel()
	s.forgetTip(name)
	if err := s.ledgers.Purge(octx, jetstream.WithPurgeSubject(s.subject(name))); err != nil {
		return ctxErr(ctx, fmt.Errorf("natsstore: delete ledger %q: %w", name, err))
	}
	s.forgetTip(name)
	return nil
}

// Read implements storage.Ledger. The tip is the ledger's last message at
// the time of the call. Records in that last message are served from it;
// anything earlier streams through an ephemeral consumer filtered on the
// ledger's subject, starting at the message that holds after+1 (found by
// binary search over stream sequences) and stopping at the tip.
//
// The cursor uses ctx for its reads: cancelling ctx ends it with ctx's
// error.
func (s *Store) Read(ctx context.Context, name string, after uint64) (storage.Cursor, error) {
	octx, cancel, err := s.nameOpCtx(ctx, name)
	if err != nil {
		return nil, err
	}
	defer cancel()
	last, err := s.lastMsg(octx, name)
	if err != nil {
		return nil, err
	}
	if last == nil || after >= last.last() {
		return &sliceCursor{}, nil
	}
	if after+1 >= last.first {
		recs, err := last.records(name)
		if err != nil {
			return nil, err
		}
		return &sliceCursor{next: after + 1, first: last.first, recs: recs[after+1-last.first:]}, nil
	}
	subj := s.subject(name)
	start := uint64(1)
	if after > 0 {
		start, err = s.findMsg(octx, name, after+1, last.sseq)
		if err != nil {
			return nil, err
		}
		if start == 0 { // deleted meanwhile
			return &sliceCursor{}, nil
		}
	}
	cons, err := s.ledgers.CreateConsumer(octx, jetstream.ConsumerConfig{
		FilterSubject:     subj,
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       start,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: 30 * time.Second,
		MemoryStorage:     true,
		Replicas:          1,
	})
	if err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("natsstore: read %q: %w", name, err))
	}
	c := &consumerCursor{s: s, ctx: ctx, name: name, next: after + 1, tip: last.last(), tipSeq: last.sseq, lastSeq: start - 1, cons: cons}
	if cons.CachedInfo().NumPending == 0 {
		c.done = true // deleted meanwhile
		return c, nil
	}
	it, err := cons.Messages(jetstream.PullMaxMessagesWithBytesLimit(512, 2*s.maxMsg))
	if err != nil {
		c.Close()
		return nil, ctxErr(ctx, fmt.Errorf("natsstore: read %q: %w", name, err))
	}
	c.it = it
	return c, nil
}

// findMsg returns the stream sequence of the message of name that holds
// ledger sequence target, given that the message at lastSeq holds records
// up to at least target; 0 when the ledger was deleted meanwhile.
func (s *Store) findMsg(ctx context.Context, name string, target, lastSeq uint64) (uint64, error) {
	subj := s.subject(name)
	ans := lastSeq
	lo, hi := uint64(1), lastSeq-1
	for lo <= hi && hi > 0 {
		mid := lo + (hi-lo)/2
		raw, err := s.ledgers.GetMsg(ctx, mid, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, ctxErr(ctx, fmt.Errorf("natsstore: read %q: %w", name, err))
		}
		if raw.Sequence >= ans {
			hi = mid - 1
			continue
		}
		m, err := parseMsg(name, raw.Sequence, raw.Header, nil)
		if err != nil {
			return 0, err
		}
		if m.last() >= target {
			ans, hi = m.sseq, mid-1
		} else {
			lo = m.sseq + 1
		}
	}
	return ans, nil
}

// sliceCursor walks records held in memory.
type sliceCursor struct {
	next, first uint64
	recs        [][]byte
	i           int
	cur         storage.Record
}

func (c *sliceCursor) Next() bool {
	if c.i >= len(c.recs) {
		c.cur = storage.Record{}
		return false
	}
	c.cur = storage.Record{Seq: c.next + uint64(c.i), Payload: c.recs[c.i]}
	c.i++
	return true
}

func (c *sliceCursor) Record() storage.Record { return c.cur }
func (c *sliceCursor) Err() error             { return nil }
func (c *sliceCursor) Close() error {
	c.recs, c.i = nil, 0
	return nil
}

// consumerCursor walks records delivered by an ephemeral consumer.
type consumerCursor struct {
	s       *Store
	ctx     context.Context
	name    string
	next    uint64 // next ledger sequence to yield
	tip     uint64 // last ledger sequence to yield
	tipSeq  uint64 // stream sequence of the message holding tip
	lastSeq uint64 // stream sequence of the last message received
	cons    jetstream.Consumer
	it      jetstream.MessagesContext

	recs   [][]byte // records of the current message still to yield
	final  bool     // the current message is the last one to yield
	cur    storage.Record
	done   bool
	err    error
	closed bool
}

func (c *consumerCursor) Next() bool {
	c.cur = storage.Record{}
	for !c.done {
		if len(c.recs) > 0 {
			c.cur = storage.Record{Seq: c.next, Payload: c.recs[0]}
			c.recs = c.recs[1:]
			c.next++
			if c.cur.Seq >= c.tip {
				c.done = true
			}
			return true
		}
		if c.final {
			c.done = true
			break
		}
		if err := c.fill(); err != nil {
			c.err, c.done = err, true
		}
	}
	return false
}

// fill receives the next message and queues its records from c.next on.
func (c *consumerCursor) fill() error {
	if c.it == nil {
		c.done = true
		return nil
	}
	// Wait in short slices: between them, a ledger deleted under the
	// cursor (its messages purged) ends it instead of a long timeout.
	var msg jetstream.Msg
	deadline := time.Now().Add(c.s.o.timeout)
	for {
		slice := min(time.Until(deadline), 500*time.Millisecond)
		ctx, cancel := context.WithTimeout(c.ctx, slice)
		m, err := c.it.Next(jetstream.NextContext(ctx))
		cancel()
		if err == nil {
			msg = m
			break
		}
		if c.ctx.Err() != nil || time.Now().After(deadline) || !errors.Is(err, context.DeadlineExceeded) {
			return ctxErr(c.ctx, fmt.Errorf("natsstore: read %q at record %d: %w", c.name, c.next, err))
		}
		if gone, gerr := c.deleted(); gerr == nil && gone {
			c.done = true
			return nil
		}
	}
	meta, err := msg.Metadata()
	if err != nil {
		return fmt.Errorf("natsstore: read %q: %w", c.name, err)
	}
	if meta.Sequence.Stream > c.tipSeq {
		// Past the tip seen at Read: the ledger was deleted and written
		// again meanwhile.
		c.done = true
		return nil
	}
	c.lastSeq = meta.Sequence.Stream
	m, err := parseMsg(c.name, meta.Sequence.Stream, msg.Headers(), msg.Data())
	if err != nil {
		return err
	}
	if err := m.checkCRC(c.name, msg.Headers()); err != nil {
		return err
	}
	recs, err := m.records(c.name)
	if err != nil {
		return err
	}
	switch {
	case m.first > c.next:
		return fmt.Errorf("natsstore: read %q: records %d..%d were not delivered (got %d next); read again", c.name, c.next, m.first-1, m.first)
	case m.last() < c.next:
		// Before the start (cannot happen past the first message).
	default:
		c.recs = recs[c.next-m.first:]
	}
	if meta.Sequence.Stream == c.tipSeq || meta.NumPending == 0 {
		// The tip's message, or the last one there is (the rest was
		// deleted meanwhile).
		c.final = true
		c.it.Stop()
	}
	return nil
}

// deleted reports whether the records still to come are gone from the
// stream (the ledger was deleted after Read).
func (c *consumerCursor) deleted() (bool, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.s.o.timeout)
	defer cancel()
	raw, err := c.s.ledgers.GetMsg(ctx, c.lastSeq+1, jetstream.WithGetMsgSubject(c.s.subject(c.name)))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return raw.Sequence > c.tipSeq, nil
}

func (c *consumerCursor) Record() storage.Record { return c.cur }
func (c *consumerCursor) Err() error             { return c.err }

func (c *consumerCursor) Close() error {
	if c.closed {
		return nil
	}
	c.closed, c.done, c.recs = true, true, nil
	if c.it != nil {
		c.it.Stop()
	}
	name := c.cons.CachedInfo().Name
	s := c.s
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.bg.Add(1)
	}
	s.mu.Unlock()
	if closed {
		return nil
	}
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.ledgers.DeleteConsumer(ctx, name)
	}()
	return nil
}
