package host

import (
	"context"
	"time"

	"looprig/rig"
	"looprig/rig/storage"
)

// livenessProbeTimeout bounds the connection HolderLiveness makes where
// it cannot read the process table (probeLiveness).
const livenessProbeTimeout = time.Second

// probeLiveness is HolderLiveness by connection, as listings learned it
// before: the kernel (or the host's hello) names the process listening on
// session id's socket in dir, and the session is served when that is the
// holder. It cannot tell a stopped holder: one that answers no hello
// reads as not serving.
func probeLiveness(ctx context.Context, dir, id string, h storage.Holder, opts ...DialOption) rig.Liveness {
	ctx, cancel := context.WithTimeout(ctx, livenessProbeTimeout)
	defer cancel()
	pid, err := ServingPID(ctx, dir, id, opts...)
	if err == nil && pid == h.PID {
		return rig.LivenessServing
	}
	return rig.LivenessUnknown
}
