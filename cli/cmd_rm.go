package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
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
	exit, deleted := exitOK, 0
	for _, input := range c.args {
		code := c.rmOne(input)
		if code == exitOK {
			deleted++
		} else if exit == exitOK {
			exit = code
		}
	}
	if deleted > 0 && c.yes {
		c.sweepAfterRm()
	}
	return exit
}

// sweepAfterRm deletes the blobs only deleted sessions' checkpoints
// referenced (rig.SweepBlobs: those put in the last minutes stay for
// looprig gc); a failure is a warning: the sessions are deleted.
func (c *call) sweepAfterRm() {
	ctx, cancel := context.WithTimeout(context.Background(), gcTimeout)
	defer cancel()
	res, err := rig.SweepBlobs(ctx, c.st, rig.SweepGrace)
	switch {
	case err != nil:
		fmt.Fprintf(c.stderr, "looprig: the sessions are deleted, their checkpoints' blobs not: %s (looprig gc tries again)\n", textsafe.Line(err.Error()))
	case res.Deleted > 0 && !c.json:
		fmt.Fprintf(c.stdout, "freed %s of checkpoints (%s)\n", byteSize(res.DeletedBytes), plural(res.Deleted, "blob"))
	}
}

// rmOne deletes the session input names, or without yes says what it
// would delete and refuses. A session whose journal or catalog entry is
// damaged can be deleted too: that is often why it is being deleted.
func (c *call) rmOne(input string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := rig.FindSession(ctx, c.st, input)
	if err != nil {
		return c.fail(err)
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
		return c.fail(terr)
	case tip > 0:
		journal = fmt.Sprintf("its journal (%d records)", tip)
	case rig.IsNotFound(cerr):
		return c.fail(&NotFoundError{Input: input, Store: c.st.Dir()})
	}
	if !c.yes {
		ws := filepath.Join(c.st.WorkspacesDir(), id.String())
		msg := fmt.Sprintf("refusing to delete %s without --yes: %s, its catalog entry and its workspace directory %s (if it has one) would be removed for good",
			what, journal, ws)
		return c.fail(&UsageError{Cmd: "rm", Msg: msg, Hint: fmt.Sprintf("looprig %srm %s --yes", c.globalArgs(), short)})
	}
	d, err := rig.DeleteSession(ctx, c.st, c.st.WorkspacesDir(), id)
	if rig.IsNotFound(err) {
		return c.fail(&NotFoundError{Input: input, Store: c.st.Dir()})
	}
	if err != nil {
		return c.fail(err)
	}
	c.removeHostLog(id.String())
	if c.json {
		out := rmJSON{ID: d.ID, Deleted: true, Epoch: d.Epoch, Journal: d.Journal, Catalog: d.Catalog}
		if d.Workspace != "" {
			out.Workspace = &d.Workspace
		}
		c.writeJSON(out)
		return exitOK
	}
	fmt.Fprintf(c.stdout, "deleted %s", what)
	if d.Workspace != "" {
		fmt.Fprintf(c.stdout, " and its workspace %s", textsafe.Line(d.Workspace))
	}
	fmt.Fprintln(c.stdout)
	return exitOK
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
