package host

import (
	"context"
	"errors"

	"looprig/rig"
	"looprig/rig/event"
)

// feedBatch bounds the events one read of a host feed returns.
const feedBatch = 1024

// OpenFeed implements rig.Feed: the session's events come from the host,
// on a Stream subscribed after after (which replaces the client's open
// stream). Follow the session with rig.Follow(ctx, client, after): a
// stream that falls behind is subscribed again after the last durable
// event, and the session stopping ends it with rig.ErrFollowEnded.
func (c *Client) OpenFeed(ctx context.Context, after uint64) (rig.FeedReader, error) {
	st, err := c.Subscribe(ctx, after)
	if err != nil {
		return nil, err
	}
	return &streamFeed{st: st}, nil
}

// streamFeed reads a Stream as a rig.FeedReader.
type streamFeed struct {
	st  *Stream
	end error // the stream's end, after the events returned with it
}

// Next returns what the stream has queued, waiting for the first event.
// An event this client cannot decode is skipped (the host speaks the same
// protocol; a newer event type is not this client's to show).
func (f *streamFeed) Next(ctx context.Context) ([]event.Envelope, error) {
	if f.end != nil {
		return nil, f.end
	}
	var batch []event.Envelope
	wait := true
	for len(batch) < feedBatch {
		env, ok, err := f.st.next(ctx, wait)
		if !ok {
			break
		}
		if err != nil {
			var decode *EnvelopeDecodeError
			if errors.As(err, &decode) {
				continue
			}
			if ctx.Err() != nil && err == ctx.Err() {
				break // nothing was taken from the stream
			}
			f.end = feedEnd(err)
			break
		}
		batch = append(batch, env)
		wait = false
	}
	if len(batch) == 0 {
		if f.end != nil {
			return nil, f.end
		}
		return nil, ctx.Err()
	}
	return batch, nil
}

func (f *streamFeed) Close() error { return f.st.Close() }

// feedEnd says what the end of a stream means to a Follower.
func feedEnd(err error) error {
	var lost *StreamLostError
	switch {
	case errors.As(err, &lost):
		return &rig.FellBehindError{Err: err}
	case errors.Is(err, ErrSessionEnded):
		return &followEnded{err}
	}
	return err
}

// followEnded is the end of a stream whose session stopped: it is
// rig.ErrFollowEnded and ErrSessionEnded both.
type followEnded struct{ err error }

func (e *followEnded) Error() string { return e.err.Error() }

func (e *followEnded) Is(target error) bool { return target == rig.ErrFollowEnded || target == e.err }
