package rig

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// A fork (`looprig fork`, docs/ARCHITECTURE.md "Forks") is a new session
// whose workspace begins as the checkpoint journaled after a turn of
// another session, and whose agent conversation, when the agent's
// transcript can be copied (engine.ConversationForker), begins as the
// source's at that turn's end. It reads the source's journal and blobs
// only, never takes its lease: a live source goes on as it was. Blobs
// are content-addressed: the fork's records name the source's manifest,
// so deleting the source frees none of them (sweep.go referencedBlobs).
//
// A fork goes into a directory of its own in the store, or an exclusive
// root given for it: empty or missing, or holding only the ".git" file of
// a worktree made for it (the CLI makes one for a source in a worktree),
// which it keeps (materializeBesideGitFile).

// ForkError: session Session cannot be forked at the turn asked for;
// Reason says why (no such turn, it has not ended, no checkpoint of the
// workspace followed it, the fork's directory is not empty).
type ForkError struct {
	Session string
	// Turn is the turn asked for ("" for the last that ended); Index the
	// turn found, -1 when none was.
	Turn   string
	Index  int
	Reason string
	Err    error
}

func (e *ForkError) Error() string {
	at := "its last turn that ended"
	switch {
	case e.Index >= 0:
		at = fmt.Sprintf("turn %d", e.Index)
	case e.Turn != "":
		at = "turn " + e.Turn
	}
	return fmt.Sprintf("cannot fork session %s at %s: %s", ShortID(e.Session), at, e.Reason)
}

func (e *ForkError) Unwrap() error { return e.Err }

// Fork is what ForkSession made of its source.
type Fork struct {
	From event.ForkedFrom
	// Files and Bytes: the regular files of the checkpoint the fork's
	// workspace began with, and their size.
	Files int
	Bytes int64
	// Conversation is the fork's agent conversation ("" for other
	// engines, and for an agent that names it at the first turn);
	// ConversationForked says it continues the source's at the turn, else
	// Fresh says why it starts anew.
	Conversation       string
	ConversationForked bool
	Fresh              string
}

// forkPlan is what create needs of a fork: where it came from, the
// checkpoint its workspace begins as, and the source's conversation at
// the turn (nil when it had none stored).
type forkPlan struct {
	from       event.ForkedFrom
	ck         *Checkpoint
	conv       *event.AgentConversation
	transcript *event.AgentTranscript
	out        *Fork
}

func (p *forkPlan) refuse(reason string) *ForkError {
	return &ForkError{Session: p.from.Session, Index: p.from.TurnIndex, Turn: fmt.Sprint(p.from.TurnIndex), Reason: reason}
}

// ForkSession creates a session that begins where session source was
// after turn (its index, "#3", or a prefix of its id; "" for the last turn
// that ended): its workspace is the checkpoint journaled for that turn
// (materialized into the new session's place: a directory of its own, or
// the rig's exclusive root, which must be empty or missing), its journal
// records where it came from (SessionStarted.ForkedFrom) and that
// checkpoint as its workspace pointer (WorkspaceCheckpointed, TriggerFork),
// and an agent session's conversation is a copy of the source's at that
// turn under a new id (AgentConversation, AgentTranscript), which its first
// turn resumes. A turn whose checkpoint is being taken is waited for,
// until ctx ends. It fails with *ForkError when the turn cannot be forked,
// else as NewSession does.
func (r *Rig) ForkSession(ctx context.Context, source uuid.UUID, turn string, opts ...SessionOption) (*Session, *Fork, error) {
	sid := source.String()
	span, err := settledTurn(ctx, r.store, source, turn, true)
	var nf *TurnNotFoundError
	var nc *TurnNotCheckpointedError
	switch {
	case errors.As(err, &nf) && turn == "":
		return nil, nil, &ForkError{Session: sid, Index: -1, Reason: "it has no turn that ended yet", Err: err}
	case errors.As(err, &nf):
		return nil, nil, &ForkError{Session: sid, Turn: turn, Index: -1, Reason: fmt.Sprintf("it has no turn %s (`looprig log %s` lists its turns)", turn, ShortID(sid)), Err: err}
	case errors.As(err, &nc):
		return nil, nil, &ForkError{Session: sid, Turn: turn, Index: nc.Index, Reason: "there is no checkpoint of its workspace after that turn: " + nc.Reason, Err: err}
	case err != nil:
		return nil, nil, fmt.Errorf("fork session %s: %w", ShortID(sid), err)
	}
	plan := &forkPlan{
		from: event.ForkedFrom{Session: sid, TurnIndex: span.index, TurnID: span.id, Checkpoint: span.ck.Manifest},
		ck:   span.ck, conv: span.conv, out: &Fork{Files: span.ck.Files, Bytes: span.ck.Bytes},
	}
	if span.conv != nil {
		plan.from.Conversation = span.conv.ID
		if span.transcript != nil && span.transcript.ID == span.conv.ID && span.transcript.Agent == span.conv.Agent {
			plan.transcript = span.transcript
		}
	}
	s, err := r.create(ctx, plan, opts...)
	if err != nil {
		return nil, nil, err
	}
	plan.out.From = plan.from
	return s, plan.out, nil
}

// placeFork places fork s's workspace as placeWorkspace does, with the
// fork's checkpoint materialized there first: a new directory in the
// store, or the exclusive root (leased first; empty or missing, never
// written over).
func (r *Rig) placeFork(ctx context.Context, s *Session, p *forkPlan) (*workspace, error) {
	id := s.id.String()
	if r.profile.Placement != PlacementExclusive {
		if err := r.materializeCheckpoint(ctx, s, p.ck, filepath.Join(r.workspaces, id)); err != nil {
			return nil, err
		}
		return r.placeWorkspace(ctx, id, nil)
	}
	root, err := canonicalPath(r.profile.Root)
	if err != nil {
		return nil, fmt.Errorf("workspace root %s: %w", r.profile.Root, err)
	}
	l, err := r.acquireRoot(ctx, root)
	if err != nil {
		return nil, err
	}
	s.ws = &workspace{placement: PlacementExclusive, root: root, lease: l} // released by abortConstruction
	fi, err := os.Lstat(root)
	gitFile := false
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("workspace root %s: %w", root, err)
	case fi.IsDir() && onlyGitFile(root):
		gitFile = true
	case !fi.IsDir() || !removeIfEmpty(root):
		return nil, p.refuse(fmt.Sprintf("%s is not an empty directory: a fork's files go into a new or empty one", root))
	}
	if gitFile {
		err = materializeBesideGitFile(root, func() error { return r.materializeCheckpoint(ctx, s, p.ck, root) })
	} else {
		err = r.materializeCheckpoint(ctx, s, p.ck, root)
	}
	if err != nil {
		return nil, err
	}
	return r.placeWorkspace(ctx, id, l)
}

// onlyGitFile says whether directory dir holds a ".git" file alone: a git
// worktree added for a fork without its files (git worktree add
// --no-checkout), whose ".git" names the worktree's own metadata.
func onlyGitFile(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) == 1 && entries[0].Name() == ".git" && entries[0].Type().IsRegular()
}

// materializeBesideGitFile materializes a fork's files (materialize) into
// root, which holds only its worktree's ".git" file: that file is kept,
// and the ".git" the checkpoint holds (its source's: a file naming the
// source worktree's metadata, or a repository's directory) is not, so the
// fork's git is its own worktree's, never its source's.
func materializeBesideGitFile(root string, materialize func() error) error {
	gitFile := filepath.Join(root, ".git")
	kept := filepath.Join(filepath.Dir(root), "."+filepath.Base(root)+".git-looprig")
	if err := os.Rename(gitFile, kept); err != nil {
		return fmt.Errorf("workspace root %s: keep its .git: %w", root, err)
	}
	err := os.Remove(root) // empty now: materialize makes it
	if err == nil {
		err = materialize()
	}
	if err != nil {
		os.Mkdir(root, 0o700) // for the .git put back below; a failed fork's root is removed with it
	}
	if rerr := os.RemoveAll(gitFile); rerr != nil && err == nil {
		err = fmt.Errorf("workspace root %s: the checkpoint's .git: %w", root, rerr)
	}
	if rerr := os.Rename(kept, gitFile); rerr != nil && err == nil {
		err = fmt.Errorf("workspace root %s: put back its .git: %w", root, rerr)
	}
	return err
}

// journalFork journals fork s's workspace pointer (the source's
// checkpoint) and, for an agent whose transcript can be copied, the
// forked conversation; for another agent it says why the conversation
// starts anew (Fork.Fresh).
func (r *Rig) journalFork(ctx context.Context, s *Session, p *forkPlan) error {
	ck := event.WorkspaceCheckpointed{Manifest: p.ck.Manifest, Files: p.ck.Files, Bytes: p.ck.Bytes, Skipped: p.ck.Skipped,
		Trigger: event.TriggerFork, Host: hostname()}
	if _, err := s.hub.Publish(ctx, "", ck); err != nil {
		return err
	}
	a := s.agent()
	switch {
	case a == nil:
		return nil
	case p.conv == nil || p.conv.Agent != a.Name():
		p.out.Fresh = "the source had no " + a.Name() + " conversation at that turn"
		return nil
	case p.transcript == nil:
		p.out.Fresh = "the source's conversation had no stored transcript at that turn"
		return nil
	}
	fk, ok := a.(engine.ConversationForker)
	if !ok {
		p.out.Fresh = a.Name() + "'s conversations cannot be forked: the fork's first turn starts a new one"
		return nil
	}
	id := fk.NewConversation()
	d, size, err := forkTranscript(ctx, r.store, p.transcript, fk, id)
	if err != nil {
		return fmt.Errorf("fork the %s conversation %s: %w", a.Name(), p.transcript.ID, err)
	}
	if _, err := s.hub.Publish(ctx, "", event.AgentConversation{Agent: a.Name(), ID: id}); err != nil {
		return err
	}
	if _, err := s.hub.Publish(ctx, "", event.AgentTranscript{Agent: a.Name(), ID: id, Blob: d.String(), Bytes: size}); err != nil {
		return err
	}
	p.out.Conversation, p.out.ConversationForked = id, true
	return nil
}

// forkTranscript stores a copy of stored transcript tr as conversation
// to's, each line rewritten by fk.ForkLine.
func forkTranscript(ctx context.Context, store storage.BlobStore, tr *event.AgentTranscript, fk engine.ConversationForker, to string) (storage.Digest, int64, error) {
	src, err := storage.ParseDigest(tr.Blob)
	if err != nil {
		return storage.Digest{}, 0, err
	}
	m, err := loadTranscript(ctx, store, src)
	if err != nil {
		return storage.Digest{}, 0, err
	}
	pr, pw := io.Pipe()
	go func() {
		lw := &lineRewriter{w: pw, rewrite: func(line []byte) []byte { return fk.ForkLine(line, tr.ID, to) }}
		err := writeTranscript(ctx, store, m, lw)
		if err == nil {
			err = lw.flush()
		}
		pw.CloseWithError(err)
	}()
	d, size, err := putTranscript(ctx, store, bufio.NewReader(pr), nil)
	pr.CloseWithError(err) // the writer stops, if it has not
	return d, size, err
}

// lineRewriter writes what is written to it to w one line at a time,
// each rewritten (a last line without its newline at flush).
type lineRewriter struct {
	w       io.Writer
	rewrite func([]byte) []byte
	buf     []byte
}

func (l *lineRewriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.buf = append(l.buf, p...)
			break
		}
		l.buf = append(l.buf, p[:i+1]...)
		p = p[i+1:]
		if _, err := l.w.Write(l.rewrite(l.buf)); err != nil {
			return 0, err
		}
		l.buf = l.buf[:0]
	}
	return n, nil
}

func (l *lineRewriter) flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	_, err := l.w.Write(l.rewrite(l.buf))
	l.buf = nil
	return err
}
