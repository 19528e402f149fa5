package host

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync"

	"looprig/rig/event"
)

// A Client's subscription: Subscribe opens it, the client's reader hands
// its messages to it (toStream), and Stream.Next reads its events.

// Subscribe opens a stream of the session's events after afterSeq: every
// durable event after it exactly once, in sequence order, then live events
// (output deltas may be dropped: see Stream.Dropped). It replaces the
// client's open stream, if any. When ctx ends before the host answers and
// the host did subscribe, the client undoes it (and the stream it
// replaced ends with ErrStreamClosed).
func (c *Client) Subscribe(ctx context.Context, afterSeq uint64) (*Stream, error) {
	s := &Stream{c: c, max: c.cfg.buffer, wake: make(chan struct{}, 1), lastSeq: afterSeq, queuedSeq: afterSeq}
	if _, err := c.roundTrip(ctx, &subscribeRequest{AfterSeq: afterSeq}, s); err != nil {
		return nil, err
	}
	return s, nil
}

// toStream hands a message of subscription s to it.
func (c *Client) toStream(s *Stream, m streamMsg) {
	switch m := m.(type) {
	case *eventMsg:
		if s.push(m.Event) {
			return
		}
		// The stream's queue overflowed: tell the host to stop sending.
		c.forget(s)
		c.unsubscribeLater(s.sub)
	case *droppedMsg:
		s.dropped(m.Count)
	case *lostMsg:
		c.forget(s)
		s.end(&StreamLostError{LastSeq: m.LastSeq, Message: m.Message})
	case *endMsg:
		c.forget(s)
		switch {
		case m.Error != nil:
			s.end(m.Error)
		case m.Reason == ReasonSessionStopped:
			s.end(ErrSessionEnded)
		default:
			s.end(&HostClosedError{Reason: m.Reason})
		}
	}
}

// Stream is one subscription's events. Next is for one goroutine at a
// time.
type Stream struct {
	c   *Client
	sub uint64 // set by the reader before the first event
	max int

	wake chan struct{}

	mu        sync.Mutex
	q         []item
	err       error  // the end, after q
	over      bool   // no more events are queued
	drops     uint64 // dropped so far (host and client)
	seen      uint64 // drops as of the last event Next returned
	lastSeq   uint64 // last durable sequence Next returned
	queuedSeq uint64 // last durable sequence queued
}

type item struct {
	raw   json.RawMessage // the event line, decoded by Next
	err   error
	drops uint64
}

// envelopeHead is what push reads of an event line: the client's reader
// must keep up with the socket, so the event itself is decoded by Next, on
// the reader's side of the queue (and a delta dropped here is never
// decoded at all).
type envelopeHead struct {
	Type event.Type `json:"type"`
	Seq  uint64     `json:"seq"`
}

// readHead reads the head of an event line: off its start, where
// event.MarshalEnvelope writes it ({"seq":N,"type":"T",…), without a
// parse; any other line through encoding/json.
func readHead(raw []byte) (envelopeHead, error) {
	const seqKey, typeKey = `{"seq":`, `,"type":"`
	if rest, ok := bytes.CutPrefix(raw, []byte(seqKey)); ok {
		i := 0
		for i < len(rest) && i < 20 && '0' <= rest[i] && rest[i] <= '9' {
			i++
		}
		if i > 0 && (i == 1 || rest[0] != '0') {
			if seq, err := strconv.ParseUint(string(rest[:i]), 10, 64); err == nil {
				if t, ok := bytes.CutPrefix(rest[i:], []byte(typeKey)); ok {
					// Type names are letters only: the next quote ends it.
					if j := bytes.IndexByte(t, '"'); j > 0 && bytes.IndexByte(t[:j], '\\') < 0 {
						return envelopeHead{Type: event.Type(t[:j]), Seq: seq}, nil
					}
				}
			}
		}
	}
	var head envelopeHead
	if err := json.Unmarshal(raw, &head); err != nil {
		return head, &EnvelopeDecodeError{Reason: "not a JSON object", Err: err}
	}
	return head, nil
}

// push queues an event line; false when the queue overflowed and the
// stream is lost.
func (s *Stream) push(raw json.RawMessage) bool {
	head, err := readHead(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.over {
		return true
	}
	delta := err == nil && head.Type == event.TypeOutputDelta
	limit := s.max
	if delta {
		limit -= s.max / 4
	}
	if len(s.q) >= limit {
		if delta {
			s.drops++
			return true
		}
		s.over = true
		s.err = &StreamLostError{LastSeq: s.queuedSeq, Local: true}
		s.signal()
		return false
	}
	if err == nil && head.Seq > 0 {
		s.queuedSeq = head.Seq
	}
	s.q = append(s.q, item{raw: raw, err: err, drops: s.drops})
	s.signal()
	return true
}

func (s *Stream) dropped(n uint64) {
	s.mu.Lock()
	s.drops += n
	s.mu.Unlock()
}

// end ends the stream after what is queued.
func (s *Stream) end(err error) {
	s.mu.Lock()
	if !s.over {
		s.over = true
		s.err = err
	}
	s.mu.Unlock()
	s.signal()
}

func (s *Stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Next returns the next event. An event the client cannot decode is
// returned as *EnvelopeDecodeError (the stream goes on). At the end it
// returns ErrSessionEnded (the session stopped), *StreamLostError (the
// stream fell behind: subscribe again after its LastSeq), ErrStreamClosed,
// *RemoteError, or the client's error.
func (s *Stream) Next(ctx context.Context) (event.Envelope, error) {
	env, _, err := s.next(ctx, true)
	return env, err
}

// next is Next; without wait, it returns ok false at once when nothing is
// queued and the stream has not ended.
func (s *Stream) next(ctx context.Context, wait bool) (env event.Envelope, ok bool, err error) {
	for {
		s.mu.Lock()
		if len(s.q) > 0 {
			it := s.q[0]
			s.q[0] = item{}
			s.q = s.q[1:]
			s.seen = it.drops
			s.mu.Unlock()
			if it.err != nil {
				return event.Envelope{}, true, it.err
			}
			env, err := event.UnmarshalEnvelope(it.raw)
			if err == nil && env.Seq > 0 {
				s.mu.Lock()
				s.lastSeq = env.Seq
				s.mu.Unlock()
			}
			return env, true, err
		}
		if s.over {
			err := s.err
			s.mu.Unlock()
			return event.Envelope{}, true, err
		}
		s.mu.Unlock()
		if !wait {
			return event.Envelope{}, false, nil
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return event.Envelope{}, true, ctx.Err()
		}
	}
}

// Dropped counts the output deltas dropped before the last event Next
// returned (by the host, for this stream, or by the client's queue). When
// it changes, a delta may be missing: rely on TurnOutput checkpoints.
func (s *Stream) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

// LastSeq is the sequence of the last durable event Next returned (the
// subscription's after_seq before the first).
func (s *Stream) LastSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastSeq
}

// Close ends the stream at once (what was queued is discarded; Next
// returns ErrStreamClosed) and tells the host, in the background.
func (s *Stream) Close() error {
	s.mu.Lock()
	wasOver := s.over
	s.q = nil
	s.mu.Unlock()
	s.end(ErrStreamClosed)
	if wasOver {
		return nil
	}
	c := s.c
	c.mu.Lock()
	active := c.active == s
	c.mu.Unlock()
	c.forget(s)
	if active {
		c.unsubscribeLater(s.sub)
	}
	return nil
}
