package storage

import (
	"fmt"
	"strconv"
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
