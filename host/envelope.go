package host

import "looprig/rig/event"

// EnvelopeDecodeError is what Stream.Next returns for an event line the
// client cannot decode (the stream goes on): the envelope codec's error.
type EnvelopeDecodeError = event.EnvelopeDecodeError
