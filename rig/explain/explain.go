// Package explain explains the runtime's errors for people: what kind of
// failure an error is (a fault.Kind, which decides its fault.Type; a
// staged operation's kind is its stage), with which typed facts, and
// what to do about it (a fault.Remedy). Each error type of the runtime
// carries its own explanation (it is a fault.Explainer); Explain finds
// it in an error's chain and adds the few errors the runtime does not
// own (a context's end). Every presenter (the CLI, the TUI, a host
// process) words and renders the same explanation its own way,
// switching on its typed values; none of them decides on its own what an
// error means, nor whether a failure is a lost lease
// (docs/ARCHITECTURE.md, "Errors").
package explain

import (
	"context"
	"errors"

	"looprig/rig/fault"
)

// Explain explains err: the explanation of the first error in its chain
// that explains itself (fault.First: an error of the runtime's, a host's
// failure reported to its client, a presenter's own), else a bare timeout
// or cancellation. A nil err, or one nothing in the chain of explains, is
// TypeError, KindError, RemedyNone.
func Explain(err error) fault.Explanation {
	if err == nil {
		return fault.Of(fault.KindError)
	}
	if x, ok := fault.First(err); ok {
		return x
	}
	for _, r := range foreign {
		if errors.Is(err, r.target) {
			return fault.Of(r.kind)
		}
	}
	return fault.Of(fault.KindError)
}

// foreign are the errors the runtime does not own that Explain explains:
// sentinels of the standard library, each with its kind.
var foreign = []struct {
	target error
	kind   fault.Kind
}{
	{context.DeadlineExceeded, fault.KindTimeout},
	{context.Canceled, fault.KindCanceled},
}
