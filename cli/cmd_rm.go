package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"looprig/host"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/storage"
)

var cmdRm = &command{
	name: "rm", brief: "delete sessions: journal, catalog entry, own workspace", help: helpRm,
	json: true, args: someIDs, needs: needsStore, run: runRm,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.BoolVar(&o.yes, "yes", false, "really delete")
	},
}

// someIDs is rm's argument rule: one session id or more.
func someIDs(c *call) error {
	switch {
	case len(c.args) == 0:
		return usageErr(c.cmd, "missing session id")
	case c.dash:
		return usageErr(c.cmd, `unexpected "--"`)
	}
	return nil
}

// runRm deletes sessions: looprig rm ID... --yes. Each gets its own
// deadline.
func runRm(c *call) int {
	exit := exitOK
	var deleted []rig.DeletedSession
	var worktrees []*rmWorktreeJSON
	for _, input := range c.args {
		d, wt, code := c.rmOne(input)
		if code == exitOK {
			deleted = append(deleted, d)
			worktrees = append(worktrees, wt)
		} else if exit == exitOK {
			exit = code
		}
	}
	freed := c.freeBlobs(deleted)
	if c.json {
		for i, d := range deleted {
			out := rmJSON{ID: d.ID, Deleted: true, Epoch: d.Epoch, Journal: d.Journal, Catalog: d.Catalog,
				BlobsDeleted: freed[i].Deleted, BlobsDeletedBytes: freed[i].DeletedBytes, BlobsShared: freed[i].Shared, BlobsRenewed: freed[i].Renewed,
				Worktree: worktrees[i]}
			if d.Workspace != "" {
				out.Workspace = &d.Workspace
			}
			c.writeJSON(out)
		}
	}
	return exit
}

// freeBlobs deletes at once the blobs only the deleted sessions'
// checkpoints and transcripts referenced (rig.FreeSessionBlobs) and says
// what it kept and why; a failure is a warning: the sessions are deleted,
// and looprig gc deletes those blobs later.
func (c *call) freeBlobs(deleted []rig.DeletedSession) []rig.FreedBlobs {
	if len(deleted) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), gcTimeout)
	defer cancel()
	freed, err := rig.FreeSessionBlobs(ctx, c.st, deleted)
	if err != nil {
		fmt.Fprintf(c.stderr, "looprig: the sessions are deleted, their checkpoints' blobs not all: %s (looprig gc deletes them)\n", textsafe.Line(err.Error()))
	}
	if c.json {
		return freed
	}
	var total rig.FreedBlobs
	for _, f := range freed {
		total.Deleted += f.Deleted
		total.DeletedBytes += f.DeletedBytes
		total.Shared += f.Shared
		total.Renewed += f.Renewed
	}
	whose := "their"
	if len(deleted) == 1 {
		whose = "its"
	}
	if total.Deleted > 0 {
		fmt.Fprintf(c.stdout, "deleted %s (%s) of %s checkpoints and transcripts\n", plural(total.Deleted, "blob"), byteSize(total.DeletedBytes), whose)
	}
	if total.Shared > 0 {
		fmt.Fprintf(c.stdout, "kept %s another session's checkpoints reference too\n", plural(total.Shared, "blob"))
	}
	if total.Renewed > 0 {
		fmt.Fprintf(c.stdout, "kept %s put again since (another session's checkpoint in progress may use them); looprig gc deletes them after %s if nothing references them\n",
			plural(total.Renewed, "blob"), rig.SweepGrace)
	}
	return freed
}

// rmOne deletes the session input names, or without yes says what it
// would delete and refuses. A session whose journal or catalog entry is
// damaged can be deleted too: that is often why it is being deleted.
func (c *call) rmOne(input string) (rig.DeletedSession, *rmWorktreeJSON, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := rig.FindSession(ctx, c.st, input)
	if err != nil {
		return rig.DeletedSession{}, nil, c.fail(err)
	}
	short := rig.ShortID(id.String())
	what := fmt.Sprintf("session %s", short)
	entry, cerr := rig.ReadCatalog(ctx, c.st, id.String())
	if cerr == nil && entry.Title != "" {
		what += fmt.Sprintf(" %q", textsafe.Line(entry.Title))
	}
	journal := "its journal"
	tip, terr := rig.JournalTip(ctx, c.st, id)
	var corrupt *storage.CorruptError
	switch {
	case errors.As(terr, &corrupt):
		journal = "its damaged journal"
	case terr != nil:
		return rig.DeletedSession{}, nil, c.fail(terr)
	case tip > 0:
		journal = fmt.Sprintf("its journal (%d records)", tip)
	case rig.IsNotFound(cerr):
		return rig.DeletedSession{}, nil, c.fail(&NotFoundError{Input: input, Store: c.st.Dir()})
	}
	wt := rig.RecordedWorktree(ctx, c.st, id)
	if !c.yes {
		ws := filepath.Join(c.st.WorkspacesDir(), id.String())
		msg := fmt.Sprintf("refusing to delete %s without --yes: %s, its catalog entry and its workspace directory %s (if it has one) would be removed for good",
			what, journal, ws)
		if wt != nil {
			msg += fmt.Sprintf(", and its git worktree %s and branch %s if they hold nothing uncommitted or unpushed",
				textsafe.Line(wt.Path), textsafe.Line(wt.Branch))
		}
		return rig.DeletedSession{}, nil, c.fail(&UsageError{Cmd: "rm", Msg: msg, Hint: fmt.Sprintf("looprig %srm %s --yes", c.globalArgs(), short)})
	}
	d, err := rig.DeleteSession(ctx, c.st, c.st.WorkspacesDir(), id)
	if rig.IsNotFound(err) {
		return rig.DeletedSession{}, nil, c.fail(&NotFoundError{Input: input, Store: c.st.Dir()})
	}
	if err != nil {
		return rig.DeletedSession{}, nil, c.fail(err)
	}
	c.removeHostLog(id.String())
	if !c.json {
		fmt.Fprintf(c.stdout, "deleted %s", what)
		if d.Workspace != "" {
			fmt.Fprintf(c.stdout, " and its workspace %s", textsafe.Line(d.Workspace))
		}
		fmt.Fprintln(c.stdout)
	}
	return d, c.rmWorktreeOf(wt), exitOK
}

// rmWorktreeOf removes the git worktree of a deleted session, or keeps it
// (rmWorktree), and says so: in JSON, in what it returns (nil for a
// session without one).
func (c *call) rmWorktreeOf(wt *rig.CatalogWorktree) *rmWorktreeJSON {
	if wt == nil {
		return nil
	}
	out := &rmWorktreeJSON{Path: wt.Path, Branch: wt.Branch, Repo: wt.Repo}
	var said strings.Builder
	removed, err := rmWorktree(&said, wt)
	out.Removed = removed
	if err != nil {
		fmt.Fprintf(&said, "kept its worktree %s and branch %s: %s\n", textsafe.Line(wt.Path), textsafe.Line(wt.Branch), textsafe.Line(err.Error()))
	}
	if !removed {
		out.Kept = strings.TrimSpace(said.String())
	}
	if !c.json {
		io.WriteString(c.stdout, said.String())
	}
	return out
}

// removeHostLog removes the log the session's hosts kept on this machine
// (see host.LogPath): it goes with the session.
func (c *call) removeHostLog(id string) {
	key, err := storeKey(c.st)
	if err != nil {
		return
	}
	if path, err := host.LogPath(key, id); err == nil {
		os.Remove(path)
	}
}
