package rig

import (
	"time"

	"looprig/rig/event"
	"looprig/rig/journal"
)

// RecordKind is the kind of a journal record, as a presenter sees it.
type RecordKind string

// The kinds of a Record.
const (
	// RecordFence opens a writer's tenure: the epoch of its lease.
	RecordFence RecordKind = RecordKind(journal.KindFence)
	// RecordEvent holds one enduring event.
	RecordEvent RecordKind = RecordKind(journal.KindEvent)
	// RecordCommand audits one command the session received.
	RecordCommand RecordKind = RecordKind(journal.KindCommand)
)

// Record is one record of a session's journal, for presenters (`looprig
// log`): what ReadRecords and FollowRecords deliver. It is made from the
// journal's record in one place, recordOf.
type Record struct {
	// Seq is the record's sequence in the journal.
	Seq  uint64
	Kind RecordKind
	// At is when the record was committed (UTC).
	At time.Time
	// Epoch is the lease epoch of a fence; 0 for other kinds.
	Epoch uint64
	// Event is the event of a RecordEvent (Event.Event is nil for other
	// kinds): its seq, session, loop (LoopID, "" for session scope), time
	// and payload.
	Event event.Envelope
	// Command is set for RecordCommand.
	Command *Command
}

// Command names: the Name of a Command.
const (
	CommandSubmit       = journal.CommandSubmit
	CommandInterrupt    = journal.CommandInterrupt
	CommandRespondGate  = journal.CommandRespondGate
	CommandShutdown     = journal.CommandShutdown
	CommandInput        = journal.CommandInput
	CommandInputWritten = journal.CommandInputWritten
)

// Why an input did not go in whole: the Reason of a CommandInputWritten.
const (
	InputTimedOut  = journal.InputTimedOut
	InputTurnEnded = journal.InputTurnEnded
	InputFailed    = journal.InputFailed
)

// Command is the audit of one command a session received, or of what
// became of one (CommandInputWritten); only the fields that apply are set.
// It is journal.Command's struct, so its JSON is the journal's, field for
// field (`log --json`), and the two cannot drift apart; see journal.Command
// for what each field means.
type Command journal.Command

// recordOf is the Record of the journal's record rec of session session.
func recordOf(session string, rec journal.Record) Record {
	r := Record{Seq: rec.Seq, Kind: RecordKind(rec.Kind), At: rec.At, Epoch: rec.Epoch}
	if rec.Kind == journal.KindEvent {
		r.Event = event.Envelope{Seq: rec.Seq, Session: session, LoopID: rec.LoopID, At: rec.At, Event: rec.Event}
	}
	if rec.Command != nil {
		c := Command(*rec.Command)
		r.Command = &c
	}
	return r
}

// RecordReader reads a session's journal records (ReadRecords): Next
// advances, Record is the record it advanced to, Err the error that ended
// the reading (nil at the tip), LastSeq the sequence of the last record
// read. The caller closes it.
type RecordReader struct {
	session string
	rp      *journal.Replayer
}

// Next advances to the next record; false at the tip or on an error (Err).
func (r *RecordReader) Next() bool { return r.rp.Next() }

// Record is the record Next advanced to.
func (r *RecordReader) Record() Record { return recordOf(r.session, r.rp.Record()) }

// Err is the error that ended the reading, nil when it reached the tip.
func (r *RecordReader) Err() error { return r.rp.Err() }

// LastSeq is the sequence of the last record read (after, before any).
func (r *RecordReader) LastSeq() uint64 { return r.rp.LastSeq() }

// Close releases the reader.
func (r *RecordReader) Close() error { return r.rp.Close() }
