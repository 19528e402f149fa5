package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"looprig/rig/fault"
)

// LeaseHeldError refuses an Acquire because another grant of Name is live.
// HolderEpoch is the latest epoch the backend could see; while a grant is
// being made concurrently it may be the one before the holder's.
type LeaseHeldError struct {
	Name        string
	HolderEpoch uint64
	Holder      Holder
}

func (e *LeaseHeldError) Error() string {
	who := ""
	if e.Holder.PID != 0 || e.Holder.Host != "" {
		who = " by pid " + strconv.Itoa(e.Holder.PID) + "@" + e.Holder.Host
	}
	return fmt.Sprintf("lease %q is held%s at epoch %d", e.Name, who, e.HolderEpoch)
}

// Explanation explains it: kind lease_held, of the session the lease is
// (a workspace root's: shut its holder down).
func (e *LeaseHeldError) Explanation() fault.Explanation {
	x := fault.Of(fault.KindLeaseHeld, fault.Fact("holder_epoch", e.HolderEpoch), fault.Fact("holder", e.Holder))
	if id, ok := SessionOfLease(e.Name); ok {
		x.Add("session", id)
	} else if strings.HasPrefix(e.Name, RootLeaseName("")) {
		x.Remedy = fault.RemedyShutDownRootHolder
	}
	return x
}

// ConflictError is a failed compare-and-swap: a ledger whose tip is not
// Expected, or a KV key whose revision is not Expected. Actual is what the
// backend found when it refused.
type ConflictError struct {
	Name     string
	Expected uint64
	Actual   uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("conflict on %q: expected %d, found %d", e.Name, e.Expected, e.Actual)
}

// InvalidNameError refuses a name that breaks the name grammar.
type InvalidNameError struct {
	Name   string
	Reason string
}

func (e *InvalidNameError) Error() string {
	return fmt.Sprintf("invalid storage name %q: %s", e.Name, e.Reason)
}

// NotFoundError is returned by KV.Get for an absent key.
type NotFoundError struct {
	Key string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("key %q not found", e.Key) }

// PayloadTooLargeError refuses a payload or value over MaxPayload.
type PayloadTooLargeError struct {
	Name string
	Size int
	Max  int
}

func (e *PayloadTooLargeError) Error() string {
	return fmt.Sprintf("payload for %q is %d bytes, over the limit of %d", e.Name, e.Size, e.Max)
}

// NotWritableError: the store can be read but not written (a read-only
// file system, no write permission), met by something that writes to it.
// Reading it (ls, log, diff) works all the same.
type NotWritableError struct {
	Name string // the ledger concerned
	Path string // its file, when the backend has files
	Err  error  // the refusal, as the system gave it
}

func (e *NotWritableError) Error() string {
	where := e.Name
	if e.Path != "" {
		where = e.Path
	}
	msg := "the store cannot be written (it is read-only here): " + where
	if e.Err != nil {
		var pe *fs.PathError
		if errors.As(e.Err, &pe) {
			return msg + ": " + pe.Err.Error()
		}
		return msg + ": " + e.Err.Error()
	}
	return msg
}

func (e *NotWritableError) Unwrap() error { return e.Err }

// CorruptError reports stored data that cannot be trusted: a damaged ledger
// frame, an unreadable epoch file, a garbled KV entry. Backends fail closed
// on it: nothing is repaired or overwritten that could hold acknowledged
// data.
type CorruptError struct {
	// Name is the ledger, lease or key concerned ("" for the store itself).
	Name string
	// Path is the file concerned, when the backend has files.
	Path string
	// Offset is the byte offset of the damage, or -1 when unknown.
	Offset int64
	// Reason says what is wrong, in a few words.
	Reason string
	// EpochFile says the damaged data is a lease's epoch file (Path),
	// which looprig never resets on its own: a lower epoch could let a
	// stale holder's writes through. The backend that wrote the file
	// says so; nobody guesses it from the path.
	EpochFile bool
	// Err is the underlying error, if any.
	Err error
}

func (e *CorruptError) Error() string {
	where := e.Name
	if e.Path != "" {
		where = e.Path
	}
	msg := fmt.Sprintf("corrupt store data in %s", where)
	if e.Offset >= 0 {
		msg += fmt.Sprintf(" at byte %d", e.Offset)
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Explanation explains it: kind corrupt (a lease's epoch file: repair it
// by hand).
func (e *CorruptError) Explanation() fault.Explanation {
	x := fault.Of(fault.KindCorrupt, fault.Fact("name", e.Name), fault.Fact("path", e.Path), fault.Fact("offset", e.Offset))
	if e.EpochFile {
		x.Remedy = fault.RemedyRepairEpochFile
	}
	return x
}

// LossReason says why a lease was lost.
type LossReason string

const (
	LossReleased      LossReason = "released"       // the holder released it
	LossReplaced      LossReason = "replaced"       // the lock was replaced (a forced break)
	LossEpochAdvanced LossReason = "epoch_advanced" // a later grant exists
	LossUnknown       LossReason = "unknown"
)

// LeaseLostError says a lease is no longer valid. Writers that find it
// must stop: a successor may already own the name.
type LeaseLostError struct {
	Name   string
	Epoch  uint64
	Reason LossReason
	// NewEpoch is the successor's epoch when known, else 0.
	NewEpoch uint64
}

func (e *LeaseLostError) Error() string {
	msg := fmt.Sprintf("lease %q at epoch %d was lost (%s)", e.Name, e.Epoch, e.Reason)
	if e.NewEpoch > 0 {
		msg += fmt.Sprintf("; epoch %d holds it now", e.NewEpoch)
	}
	return msg
}

// Explanation explains it: kind lease_lost (LostLease).
func (e *LeaseLostError) Explanation() fault.Explanation { return LostLease(e.Name, e.Epoch, e) }

// LostLease is the explanation of a lost lease: kind lease_lost, of the
// lease name at epoch (of the session name is, nil when it is none's),
// with the successor's epoch and the reason of the *LeaseLostError in
// cause's chain when there is one. It is the one place that says what a
// lost lease's facts are, whoever lost it (the lease, a session's
// journal, a fenced writer, a workspace root).
func LostLease(name string, epoch uint64, cause error) fault.Explanation {
	var session any
	if id, ok := SessionOfLease(name); ok {
		session = id
	}
	var newEpoch uint64
	var reason string
	var ll *LeaseLostError
	if errors.As(cause, &ll) {
		newEpoch, reason = ll.NewEpoch, string(ll.Reason)
	}
	return fault.Of(fault.KindLeaseLost, fault.Fact("session", session), fault.Fact("epoch", epoch),
		fault.Fact("new_epoch", newEpoch), fault.Fact("reason", reason))
}
