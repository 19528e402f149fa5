package rig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"looprig/rig/checkpoint"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// Reconciling a workspace: a restore that finds the session's workspace
// directory on its machine compares it with the journal's last
// checkpoint, using the stat index's lineage (which checkpoint the
// directory last matched, on this machine), and never rolls it back nor
// overwrites work no checkpoint has:
//
//	the directory                                   the restore
//	is the last checkpoint                          uses it
//	is an older checkpoint, no changes of its own   brings it up to date (only what differs)
//	is the last checkpoint plus changes made here   keeps it, naming the paths
//	  (or has no known lineage, and the last checkpoint was taken here)
//	anything else                                   refuses: *WorkspaceDivergedError, before RestoreStarted
//
// A directory that is an older checkpoint plus some of the last
// checkpoint's changes (an update cut short, an index saved late) is the
// second row. The user resolves a divergence with OnDiverged: keep the
// directory (WorkspaceReconciled{adopted} and a checkpoint of it), or take
// the checkpoint (the directory moved aside to a sibling, never deleted).
// A directory the session moves into by accepted drift has no lineage
// here and none of this machine's changes (moved.go): it is used when it
// is one of the checkpoints, brought up to date from an older one, and
// refused as diverged otherwise.

// WorkspaceChoice is what a restore does with a workspace directory that
// diverged from the session's checkpoints.
type WorkspaceChoice string

const (
	// WorkspaceRefuse: fail with *WorkspaceDivergedError (the default).
	WorkspaceRefuse WorkspaceChoice = ""
	// WorkspaceKeep: keep the directory as it is; the restore journals
	// the adoption and checkpoints it.
	WorkspaceKeep WorkspaceChoice = "keep"
	// WorkspaceUseCheckpoint: move the directory aside to a sibling named
	// <dir>.diverged-<time> and bring the last checkpoint back.
	WorkspaceUseCheckpoint WorkspaceChoice = "checkpoint"
)

// OnDiverged says what RestoreSession does with a workspace directory
// that diverged from the session's checkpoints.
func OnDiverged(c WorkspaceChoice) RestoreOption {
	return func(o *restoreOptions) { o.onDiverged = c }
}

// WorkspaceFound is how a restore found a session's workspace directory
// against its last checkpoint, and what it did.
type WorkspaceFound struct {
	// Materialized: the directory was missing and was brought back from
	// the checkpoint (Files files, Bytes bytes).
	Materialized bool
	Files        int
	Bytes        int64
	// Matches: the directory is the last checkpoint.
	Matches bool
	// Updated: the directory was the older checkpoint From with no
	// changes of its own; Changed entries were written from the last one.
	Updated bool
	From    *CheckpointRef
	Changed int
	// Kept: the directory holds changes made on this machine after the
	// last checkpoint (a turn a crash cut short, edits by hand); they are
	// kept. Differs counts the entries that differ, Paths names the
	// first few.
	Kept    bool
	Differs int
	Paths   []string
	// Adopted: the directory had diverged and was kept, as asked
	// (WorkspaceKeep).
	Adopted bool
	// MovedTo: the directory had diverged and was moved there, as asked
	// (WorkspaceUseCheckpoint); the checkpoint was brought back.
	MovedTo string
	// Err says why the comparison could not be made ("" when it was):
	// the directory is used as it is.
	Err string
	// New: an accepted drift moved the session to session placement and
	// it had no checkpoint to bring back: its workspace is a new, empty
	// directory. MovedFrom is the root it worked in before, whose files
	// stay there.
	New       bool
	MovedFrom string
}

// Summary says what the restore found of the workspace and did, in a
// sentence for people ("" when there is nothing to say: it is the last
// checkpoint). Paths in it are the workspace's: a presenter makes the
// sentence safe to show.
func (w *WorkspaceFound) Summary() string {
	if w == nil {
		return ""
	}
	entries := func(n int) string {
		if n == 1 {
			return "1 entry"
		}
		return fmt.Sprintf("%d entries", n)
	}
	paths := strings.Join(w.Paths, ", ")
	if w.Differs > len(w.Paths) {
		paths += ", …"
	}
	files := fmt.Sprintf("%d %s, %s", w.Files, pluralWord(w.Files, "file", "files"), byteSize(w.Bytes))
	switch {
	case w.Materialized:
		return "workspace brought back from its last checkpoint: " + files
	case w.Err != "":
		return "workspace not compared with its last checkpoint, used as found: " + w.Err
	case w.Updated && w.From != nil:
		return fmt.Sprintf("workspace brought up to date from the %s: %s changed", w.From, entries(w.Changed))
	case w.MovedTo != "":
		return fmt.Sprintf("workspace had changes no checkpoint has: moved aside to %s (kept there); the last checkpoint brought back: %s", w.MovedTo, files)
	case w.Adopted:
		return fmt.Sprintf("workspace kept as found, as asked: %s differ from the last checkpoint (%s); it is checkpointed now", entries(w.Differs), paths)
	case w.Kept && w.Differs > 0:
		return fmt.Sprintf("workspace kept as found, with this machine's changes since the last checkpoint: %s (%s)", entries(w.Differs), paths)
	case w.New && w.MovedFrom != "":
		return fmt.Sprintf("workspace is a new, empty directory: the session worked in %s before, and its files stay there", w.MovedFrom)
	case w.New:
		return "workspace is a new, empty directory"
	}
	return ""
}

// byteSize is n bytes for people: "512 B", "1.5 MiB".
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGT"[exp])
}

// CheckpointRef names a checkpoint the journal records, for people.
type CheckpointRef struct {
	Manifest string
	Seq      uint64
	Turn     int // the index of the turn it followed; -1 for none
	Trigger  string
	Host     string // the machine that took it ("" when not recorded)
	At       time.Time
}

// String is "checkpoint of turn 7 on box", "checkpoint at hand-over after
// turn 7 on box".
func (c CheckpointRef) String() string {
	s := "checkpoint"
	when := map[string]string{event.TriggerStop: "shutdown", event.TriggerHandoff: "hand-over", event.TriggerRestore: "restore", event.TriggerFork: "fork"}[c.Trigger]
	switch {
	case c.Trigger == event.TriggerTurn && c.Turn >= 0:
		s += fmt.Sprintf(" of turn %d", c.Turn)
	case when != "" && c.Turn >= 0:
		s += fmt.Sprintf(" at %s after turn %d", when, c.Turn)
	case when != "":
		s += " at " + when
	}
	if c.Host != "" {
		s += " on " + c.Host
	}
	return s
}

// WorkspaceDivergedError: the session's workspace directory has changes
// that no checkpoint of the session has, on top of an older checkpoint
// (the session moved on elsewhere meanwhile) or of no known one. Nothing
// was written; restore with OnDiverged to keep the directory or take the
// checkpoint.
type WorkspaceDivergedError struct {
	Session uuid.UUID
	Dir     string
	// Differs counts the entries that differ from the last checkpoint;
	// Paths names the first few.
	Differs int
	Paths   []string
	// Lineage is the checkpoint the directory last matched (by its stat
	// index), nil when unknown.
	Lineage *CheckpointRef
	// Last is the journal's last checkpoint.
	Last CheckpointRef
}

func (e *WorkspaceDivergedError) Error() string {
	base := "a checkpoint this machine has no record of"
	if e.Lineage != nil {
		base = "the " + e.Lineage.String()
	}
	more := ""
	if e.Differs > len(e.Paths) {
		more = ", …"
	}
	return fmt.Sprintf("the workspace %s has changes no checkpoint has, on top of %s, while the session moved on to the %s: %d %s differ (%s%s); keep this directory (journaled as an adoption) or take the checkpoint (this directory is moved aside, never deleted)",
		e.Dir, base, e.Last.String(), e.Differs, pluralWord(e.Differs, "entry", "entries"), strings.Join(e.Paths, ", "), more)
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// maxFoundPaths bounds the paths WorkspaceFound and WorkspaceDivergedError
// name.
const maxFoundPaths = 5

// maxLineageSearch bounds how many older checkpoints a restore compares a
// directory without a known lineage with.
const maxLineageSearch = 20

// wsPlan is what a restore does to a workspace directory it found, once
// it holds the workspace (placeWorkspace).
type wsPlan struct {
	dir         string      // the workspace directory ("" for none to look at)
	materialize *Checkpoint // bring the missing directory back from it
	intoEmpty   bool        // the directory is there, empty: removed before materialize writes it
	found       *WorkspaceFound
	have        *checkpoint.Manifest // the directory as found
	want        *checkpoint.Manifest // the last checkpoint
	update      bool                 // write what differs from want
	moveAside   bool                 // move the directory aside, materialize want
	record      *event.WorkspaceReconciled
	lineage     storage.Digest // the index's new lineage once applied (zero: keep it)
}

// checkpointRef is the journal's record of checkpoint c, for people.
func (rep *replayed) checkpointRef(c Checkpoint) CheckpointRef {
	ref := CheckpointRef{Manifest: c.Manifest, Seq: c.Seq, Turn: -1, Trigger: c.Trigger, Host: c.Host, At: c.At}
	if i, ok := rep.turnIndex[c.TurnID]; ok {
		ref.Turn = i
	}
	return ref
}

// lastRecord returns the latest record of manifest d in the journal.
func (rep *replayed) lastRecord(d storage.Digest) (Checkpoint, bool) {
	hex := d.String()
	for i := len(rep.checkpoints) - 1; i >= 0; i-- {
		if rep.checkpoints[i].Manifest == hex {
			return rep.checkpoints[i], true
		}
	}
	return Checkpoint{}, false
}

// reconcile compares the workspace directory dir of session s with the
// journal's last checkpoint and plans what to do (see the table above).
// It writes nothing.
func (r *Rig) reconcile(ctx context.Context, s *Session, dir string, rep *replayed, choice WorkspaceChoice) (*wsPlan, error) {
	last := rep.checkpoints[len(rep.checkpoints)-1]
	found := &WorkspaceFound{Files: last.Files, Bytes: last.Bytes}
	plan := &wsPlan{found: found}
	lastD, err := storage.ParseDigest(last.Manifest)
	if err != nil {
		found.Err = err.Error()
		return plan, nil
	}
	want, err := checkpoint.Load(ctx, r.store, lastD)
	if err != nil {
		found.Err = err.Error()
		return plan, nil
	}
	// A directory the session moves into (accepted drift) is none of this
	// machine's work on it: its stat index is of the directory it left.
	_, moved := r.workspaceMoved(rep.baseline)
	s.loadIndex()
	ix := s.ckpt.index
	have, err := checkpoint.Scan(ctx, dir, r.checkpointOptions(ix))
	if err != nil {
		found.Err = err.Error()
		return plan, nil
	}
	plan.have, plan.want = have, want
	diff := checkpoint.Compare(want, have)
	found.Differs = len(diff)
	for _, c := range diff[:min(len(diff), maxFoundPaths)] {
		found.Paths = append(found.Paths, c.Path)
	}
	if len(diff) == 0 {
		found.Matches, found.Differs = true, 0
		plan.lineage = lastD
		return plan, nil
	}

	// The checkpoint the directory last matched: the index's, else one
	// it is found to be exactly.
	var from *Checkpoint
	var fromM *checkpoint.Manifest
	if ix != nil {
		if c, ok := rep.lastRecord(ix.Manifest); ok {
			if ix.Manifest == lastD {
				found.Kept = true
				return plan, nil
			}
			if fromM, err = checkpoint.Load(ctx, r.store, ix.Manifest); err == nil {
				from = &c
			}
		}
	}
	if from == nil && (ix == nil || !rep.known(ix.Manifest)) {
		from, fromM = r.findLineage(ctx, rep, have)
	}
	if from != nil && agreesWith(checkpoint.Compare(fromM, have), have, want) {
		ref := rep.checkpointRef(*from)
		found.Updated, found.From, found.Changed = true, &ref, len(diff)
		found.Differs, found.Paths = 0, nil
		plan.update, plan.lineage = true, lastD
		plan.record = &event.WorkspaceReconciled{Action: event.ReconcileUpdated, Manifest: last.Manifest, From: from.Manifest,
			Differs: len(diff), Paths: pathsOf(diff), Host: hostname()}
		return plan, nil
	}

	if from == nil && !moved && (last.Host == "" || last.Host == hostname()) {
		// No record of which checkpoint the directory last matched, but
		// the last one was taken here (or by a version that did not say
		// where): what differs is this machine's work after it.
		found.Kept = true
		return plan, nil
	}
	var lineage *CheckpointRef
	if from != nil {
		ref := rep.checkpointRef(*from)
		lineage = &ref
	}
	rec := &event.WorkspaceReconciled{Manifest: last.Manifest, Differs: len(diff), Paths: pathsOf(diff), Host: hostname()}
	if from != nil {
		rec.From = from.Manifest
	}
	switch choice {
	case WorkspaceKeep:
		found.Adopted = true
		rec.Action = event.ReconcileAdopted
		plan.record = rec
		return plan, nil
	case WorkspaceUseCheckpoint:
		found.MovedTo = movedAsideName(dir, r.now())
		found.Differs, found.Paths = 0, nil
		rec.Action, rec.MovedTo = event.ReconcileMovedAside, found.MovedTo
		plan.moveAside, plan.record = true, rec
		return plan, nil
	}
	lastRef := rep.checkpointRef(last)
	return nil, &WorkspaceDivergedError{Session: s.id, Dir: dir, Differs: len(diff), Paths: pathsOf(diff), Lineage: lineage, Last: lastRef}
}

// known reports whether the journal records checkpoint d.
func (rep *replayed) known(d storage.Digest) bool {
	_, ok := rep.lastRecord(d)
	return ok
}

// findLineage looks for a checkpoint of the session, newest first (at
// most maxLineageSearch of them), that the directory is exactly.
func (r *Rig) findLineage(ctx context.Context, rep *replayed, have *checkpoint.Manifest) (*Checkpoint, *checkpoint.Manifest) {
	seen := map[string]bool{rep.checkpoints[len(rep.checkpoints)-1].Manifest: true}
	for i := len(rep.checkpoints) - 2; i >= 0 && len(seen) <= maxLineageSearch; i-- {
		c := rep.checkpoints[i]
		if seen[c.Manifest] {
			continue
		}
		seen[c.Manifest] = true
		d, err := storage.ParseDigest(c.Manifest)
		if err != nil {
			continue
		}
		m, err := checkpoint.Load(ctx, r.store, d)
		if err != nil {
			continue
		}
		if len(checkpoint.Compare(m, have)) == 0 {
			return &c, m
		}
	}
	return nil, nil
}

// agreesWith reports whether every change local made to the older
// checkpoint (the directory's own changes) is what want has at that path:
// the directory is the older checkpoint with part of the way to want
// already done, and nothing of its own.
func agreesWith(local []checkpoint.FileChange, have, want *checkpoint.Manifest) bool {
	for _, c := range local {
		h, hok := have.Lookup(c.Path)
		w, wok := want.Lookup(c.Path)
		if hok != wok || hok && !checkpoint.SameEntry(h, w) {
			return false
		}
	}
	return true
}

func pathsOf(changes []checkpoint.FileChange) []string {
	var out []string
	for _, c := range changes[:min(len(changes), maxFoundPaths)] {
		out = append(out, c.Path)
	}
	return out
}

// movedAsideName is where a diverged directory is moved: a sibling named
// after it and the time, one that does not exist yet.
func movedAsideName(dir string, now time.Time) string {
	base := dir + ".diverged-" + now.Format("20060102-150405")
	name := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(name); errors.Is(err, os.ErrNotExist) {
			return name
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
}

// apply carries out plan on the workspace directory dir, which the
// session holds now: it writes what differs, or moves the directory aside
// and materializes the checkpoint; then it gives the stat index its new
// lineage.
func (r *Rig) apply(ctx context.Context, s *Session, plan *wsPlan, dir string, last Checkpoint) error {
	switch {
	case plan.update:
		changes, err := checkpoint.Update(ctx, r.store, plan.have, plan.want, dir)
		if err != nil {
			return fmt.Errorf("bring the workspace up to date: %w", err)
		}
		plan.found.Changed = len(changes)
	case plan.moveAside:
		if err := os.Rename(dir, plan.found.MovedTo); err != nil {
			return fmt.Errorf("move the diverged workspace aside: %w", err)
		}
		// The index of the directory moved aside is replaced by the one of
		// the checkpoint brought back.
		if err := r.materializeCheckpoint(ctx, s, &last, dir); err != nil {
			return err
		}
		plan.found.Files, plan.found.Bytes = last.Files, last.Bytes
	}
	if ix := s.ckpt.index; ix != nil && !plan.lineage.IsZero() && ix.Manifest != plan.lineage {
		// The directory is the last checkpoint now; what the index knows
		// of each file's stat data still holds (changed files fail it).
		next := *ix
		next.Manifest = plan.lineage
		s.keepIndex(&next)
	}
	return nil
}

// checkpointOptions are the options every walk of a workspace uses.
func (r *Rig) checkpointOptions(ix *checkpoint.Index) checkpoint.Options {
	return checkpoint.Options{Exclude: r.profile.CheckpointExclude, Include: r.profile.CheckpointInclude, Index: ix}
}

// hostname is this machine's name, as checkpoints record it.
func hostname() string {
	h, _ := os.Hostname()
	return h
}
