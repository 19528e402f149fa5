package rig

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"looprig/rig/journal"
	"looprig/rig/procgroup"
	"looprig/rig/storage"
)

// processKey is the store key of session id's process record.
func processKey(id string) string { return sessionsPrefix + id + "/process" }

// processRecord is a session's process record: which turn of the session
// runs processes, as which process group, on which machine and boot. The
// session's holder writes it (at its epoch) once the turn's process group
// exists and before the turn's input runs (engine.Turn.Started), and
// rewrites it without a turn once the engine returned (the group is gone).
// A break and a restore write it without a turn at their new epoch once
// they have dealt with the turn it named: every write is a compare-and-swap
// on the key's revision, so a holder of an earlier epoch that resumes after
// them can record no turn, and so runs none.
//
// Whoever takes a session over reads it to find a turn of an earlier epoch
// still running on this machine (BreakLease stops it, RestoreSession
// refuses to start beside it). Its processes are recognised by the
// environment the runtime gives every turn (LOOPRIG_SESSION,
// LOOPRIG_TURN: turnEnv), never by the group id alone.
type processRecord struct {
	V     int       `json:"v"`
	Epoch uint64    `json:"epoch"`
	Turn  string    `json:"turn,omitempty"`
	Index int       `json:"index,omitempty"`
	PGID  int       `json:"pgid,omitempty"`
	Host  string    `json:"host,omitempty"`
	Boot  string    `json:"boot,omitempty"`
	Since time.Time `json:"since,omitzero"`
}

// processRecordVersion is the version of the process record's format.
const processRecordVersion = 1

// maxProcessRecord bounds the size of a process record read back.
const maxProcessRecord = 4 << 10

// running reports whether the record names a turn with a process group.
func (p processRecord) running() bool { return p.Turn != "" && p.PGID > 1 }

// machine is where the recorded turn runs.
func (p processRecord) machine() procgroup.Machine {
	return procgroup.Machine{Host: p.Host, Boot: p.Boot}
}

// group is the recorded turn's process group, with the marks its
// processes carry.
func (p processRecord) group(session uuid.UUID) procgroup.Group {
	return procgroup.Group{PGID: p.PGID, Marks: turnEnv(session.String(), p.Turn)}
}

// turnEnv is the environment the runtime gives every turn of session
// (engine.Turn.Env): the marks by which the turn's processes are
// recognised.
func turnEnv(session, turn string) []string {
	return []string{sessionMark(session), "LOOPRIG_TURN=" + turn}
}

// ProcessRecordError: a session's process record cannot be read from the
// store.
type ProcessRecordError struct {
	Session uuid.UUID
	Err     error
}

func (e *ProcessRecordError) Error() string {
	return fmt.Sprintf("session %s: read its process record: %v", ShortID(e.Session.String()), e.Err)
}

func (e *ProcessRecordError) Unwrap() error { return e.Err }

// readProcess reads session id's process record and its revision
// (storage.MustNotExist and a zero record when there is none). A record
// that cannot be decoded (damaged, or of a format this version does not
// know) names no turn anyone could recognise: it is returned as a zero
// record with its revision, to be claimed over. A store failure is a
// *ProcessRecordError.
func readProcess(ctx context.Context, kv storage.KV, id uuid.UUID) (processRecord, uint64, error) {
	e, err := kv.Get(ctx, processKey(id.String()))
	if IsNotFound(err) {
		return processRecord{}, storage.MustNotExist, nil
	}
	if err != nil {
		return processRecord{}, 0, &ProcessRecordError{Session: id, Err: err}
	}
	var p processRecord
	if len(e.Value) > maxProcessRecord {
		return processRecord{}, e.Revision, nil
	}
	dec := json.NewDecoder(bytes.NewReader(e.Value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.V != processRecordVersion {
		return processRecord{}, e.Revision, nil
	}
	return p, e.Revision, nil
}

// writeProcess writes p as session id's process record if its revision is
// still rev, and returns the new revision; *storage.ConflictError when
// someone else wrote it since.
func writeProcess(ctx context.Context, kv storage.KV, id uuid.UUID, rev uint64, p processRecord) (uint64, error) {
	p.V = processRecordVersion
	b, err := json.Marshal(p)
	if err != nil {
		return 0, err
	}
	return kv.Put(ctx, processKey(id.String()), b, rev)
}

// claimAttempts bounds how often claimProcess reads the process record
// again when the old holder wrote it in between.
const claimAttempts = 3

// claimProcess claims session id's process record at epoch: it reads the
// record, hands it to check (which may stop the turn it names, or refuse
// to go on: its error is returned, nothing claimed), then writes it
// without a turn at epoch, by compare-and-swap. When the old holder wrote
// it in between (a turn of its ended, or was about to start), it reads it
// again. It returns the claimed record's revision.
func claimProcess(ctx context.Context, kv storage.KV, id uuid.UUID, epoch uint64, check func(processRecord) error) (uint64, error) {
	for attempt := 1; ; attempt++ {
		p, rev, err := readProcess(ctx, kv, id)
		if err != nil {
			return 0, err
		}
		if err := check(p); err != nil {
			return 0, err
		}
		rev, err = writeProcess(ctx, kv, id, rev, processRecord{Epoch: epoch})
		var conflict *storage.ConflictError
		if err == nil || !errors.As(err, &conflict) || attempt == claimAttempts {
			if err != nil {
				err = fmt.Errorf("claim the process record: %w", err)
			}
			return rev, err
		}
	}
}

// dyingTurnWait is how long earlierTurnHere gives a turn whose holder just
// died to be gone: the holder's watcher kills it within moments.
const dyingTurnWait = 2 * time.Second

// earlierTurnHere reports the turn of an epoch before epoch that p names
// when its process group still has live processes, carrying the turn's
// marks, on this machine: nil when p names none, the turn ran elsewhere,
// or its processes are gone, or go within dyingTurnWait (or are not the
// turn's).
func earlierTurnHere(ctx context.Context, id uuid.UUID, p processRecord, epoch uint64) (*TurnRunningError, error) {
	if !p.running() || p.Epoch >= epoch || !p.machine().Here() {
		return nil, nil
	}
	g := p.group(id)
	st, err := procgroup.Inspect(g)
	if err == nil && st == procgroup.Marked {
		var gone bool
		if gone, err = procgroup.WaitGone(ctx, g, dyingTurnWait); err == nil && !gone {
			st, err = procgroup.Inspect(g)
		} else if gone {
			return nil, nil
		}
	}
	if err != nil {
		if errors.Is(err, procgroup.ErrUnsupported) {
			return nil, nil
		}
		return nil, fmt.Errorf("look for the process group %d of turn %d: %w", p.PGID, p.Index, err)
	}
	if st != procgroup.Marked {
		return nil, nil
	}
	return &TurnRunningError{Session: id, Turn: p.Turn, Index: p.Index, Epoch: p.Epoch, PGID: p.PGID, Host: p.Host, Since: p.Since}, nil
}

// TurnRunningError refuses a restore while a turn of an earlier holder of
// the session (one whose lease was lost, freed or broken without its turn
// being stopped: a holder that stopped, or died with a turn that outlived
// it) still runs on this machine: its processes would go on working in the
// workspace beside the restored session's. BreakLease stops it.
type TurnRunningError struct {
	Session uuid.UUID
	Turn    string // the turn's id
	Index   int
	Epoch   uint64 // the epoch of the holder that ran it
	PGID    int    // its process group
	Host    string
	Since   time.Time // when its processes started
}

func (e *TurnRunningError) Error() string {
	return fmt.Sprintf("turn %d (%s) of the holder at epoch %d still runs on this machine (%s) as process group %d",
		e.Index, e.Turn, e.Epoch, e.Host, e.PGID)
}

// recordTurn is the engine.Turn.Started of turn t: it writes the process
// record of t's process group pgid at the session's epoch, over the
// record the session last wrote or claimed. A record someone else wrote
// since (a break or a restore took the session) refuses the turn, which
// then runs nothing: the session lost its lease.
func (s *Session) recordTurn(t *turnRun) func(pgid int) error {
	return func(pgid int) error {
		select {
		case <-s.lease.Lost():
			return &journal.JournalLeaseLostError{Name: s.name, Epoch: s.lease.Epoch(), Cause: storage.LostCause(s.name, s.lease)}
		default:
		}
		m := procgroup.This()
		p := processRecord{Epoch: s.lease.Epoch(), Turn: t.id, Index: t.index, PGID: pgid, Host: m.Host, Boot: m.Boot, Since: s.rig.now().UTC()}
		ctx, cancel := s.bg()
		defer cancel()
		s.procMu.Lock()
		defer s.procMu.Unlock()
		rev, err := writeProcess(ctx, s.rig.store, s.id, s.procRev, p)
		if err != nil {
			var conflict *storage.ConflictError
			if errors.As(err, &conflict) {
				lost := &journal.JournalLeaseLostError{Name: s.name, Epoch: s.lease.Epoch(),
					Cause: fmt.Errorf("another holder took the session's process record: %w", err)}
				s.faultWith(lost)
				return lost
			}
			return fmt.Errorf("record the turn's process group: %w", err)
		}
		s.procRev, t.recorded = rev, true
		t.pgid.Store(int64(pgid))
		return nil
	}
}

// turnReaped rewrites the process record without t, once t's engine
// returned (its process group is gone), unless someone else wrote the
// record since. Best effort: a record left naming t is of a group that is
// gone, which whoever reads it finds.
func (s *Session) turnReaped(t *turnRun) {
	s.procMu.Lock()
	defer s.procMu.Unlock()
	if !t.recorded {
		return
	}
	ctx, cancel := s.bg()
	defer cancel()
	rev, err := writeProcess(ctx, s.rig.store, s.id, s.procRev, processRecord{Epoch: s.lease.Epoch()})
	if err != nil {
		s.rig.log.Warn("process record not cleared", "session", s.id, "turn", t.id, "err", err)
		return
	}
	s.procRev = rev
}
