package journal

import (
	"fmt"
	"strconv"

	"looprig/rig/fault"
	"looprig/rig/storage"
)

// JournalLeaseLostError: the writer's lease is lost, so it must not write.
// Nothing was appended. It is latched: every later append returns it.
type JournalLeaseLostError struct {
	Name  string
	Epoch uint64
	// Cause is storage.LostCause of the lease (a *storage.LeaseLostError
	// when the backend reports one).
	Cause error
}

func (e *JournalLeaseLostError) Error() string {
	msg := fmt.Sprintf("journal %q: lease at epoch %d is lost", e.Name, e.Epoch)
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

func (e *JournalLeaseLostError) Unwrap() error { return e.Cause }

// Explanation explains it: kind lease_lost (storage.LostLease).
func (e *JournalLeaseLostError) Explanation() fault.Explanation {
	return storage.LostLease(e.Name, e.Epoch, e.Cause)
}

// FencedError: the ledger's tip was not where this writer left it, so a
// successor (or any other writer) has appended: this writer is fenced off.
// It is latched: every later append returns it, and it is never retried.
type FencedError struct {
	Name string
	// Epoch is this writer's lease epoch.
	Epoch uint64
	// Expected is the tip this writer expected; Actual the tip the ledger
	// reported.
	Expected uint64
	Actual   uint64
	// Err is the *storage.ConflictError.
	Err error
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("journal %q: writer at epoch %d is fenced: expected tip %d, found %d",
		e.Name, e.Epoch, e.Expected, e.Actual)
}

func (e *FencedError) Unwrap() error { return e.Err }

// Explanation explains it: kind lease_lost, as a successor took the
// ledger (storage.LostLease).
func (e *FencedError) Explanation() fault.Explanation {
	return storage.LostLease(e.Name, e.Epoch, e.Err)
}

// AppendError: the ledger refused or failed an append for a reason other
// than a conflict. The journal can no longer know the tip (the append may
// or may not have landed), so it is latched like FencedError.
type AppendError struct {
	Name string
	// Expected is the tip the append was made at; Count its record count.
	Expected uint64
	Count    int
	Err      error
}

func (e *AppendError) Error() string {
	return fmt.Sprintf("journal %q: append of %d record(s) at %d failed: %v", e.Name, e.Count, e.Expected+1, e.Err)
}

func (e *AppendError) Unwrap() error { return e.Err }

// InvalidRecordError refuses a record the caller built wrongly: a
// loop-scope event without a loop id (or a session-scope one with one), an
// unknown command name, a zero lease epoch. Nothing was appended; the
// journal stays healthy.
type InvalidRecordError struct {
	Name   string
	Reason string
}

func (e *InvalidRecordError) Error() string {
	return fmt.Sprintf("journal %q: invalid record: %s", e.Name, e.Reason)
}

// RecordDecodeError reports a journal record that cannot be trusted: an
// unknown envelope version or kind, a malformed envelope or event, an
// ephemeral event, or a sequence gap. Readers fail closed on it.
type RecordDecodeError struct {
	// Name is the ledger name, when known.
	Name string
	// Seq is the sequence of the offending record.
	Seq uint64
	// Reason says what is wrong, in a few words.
	Reason string
	// Err is the cause, e.g. an *event.DecodeError.
	Err error
}

func (e *RecordDecodeError) Error() string {
	msg := "journal: record " + strconv.FormatUint(e.Seq, 10)
	if e.Name != "" {
		msg += " of " + strconv.Quote(e.Name)
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *RecordDecodeError) Unwrap() error { return e.Err }

// Explanation explains it: kind broken_journal.
func (e *RecordDecodeError) Explanation() fault.Explanation {
	return fault.Of(fault.KindBrokenJournal, fault.Fact("seq", e.Seq), fault.Fact("reason", e.Reason))
}
