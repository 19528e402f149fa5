//go:build !linux

package host

import (
	"context"

	"looprig/rig"
	"looprig/rig/storage"
)

// HolderLiveness says whether h, the holder of session id's lease on this
// machine, serves the session from socket directory dir. Where the process
// table cannot be read without a helper (here), it connects to the
// session's socket (probeLiveness), bounded by a second.
func HolderLiveness(ctx context.Context, dir, id string, h storage.Holder, opts ...DialOption) rig.Liveness {
	return probeLiveness(ctx, dir, id, h, opts...)
}
