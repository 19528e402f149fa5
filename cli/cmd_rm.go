package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/storage"
)

// cmdRm deletes sessions: looprig rm ID... --yes.
func cmdRm(e *env, args []string) int {
	fs := e.newFlags("rm")
	fs.BoolVar(&e.json, "json", false, "JSON output")
	yes := fs.Bool("yes", false, "really delete")
	pos, _, dash, code, done := e.parse(fs, args, helpRm)
	if done {
		return code
	}
	switch {
	case len(pos) == 0:
		return e.fail(usageErr(e.cmd, "missing session id"))
	case dash:
		return e.fail(usageErr(e.cmd, "unexpected \"--\""))
	}
	if _, err := e.loadConfig(); err != nil { // a bad configuration is an error everywhere
		return e.fail(err)
	}
	st, err := e.openStore()
	if err != nil {
		return e.fail(err)
	}
	defer st.Close()
	exit := exitOK
	for _, input := range pos {
		if c := e.rmOne(st, input, *yes); c != exitOK && exit == exitOK {
			exit = c
		}
	}
	return exit
}

// rmOne deletes the session input names, or without yes says what it
// would delete and refuses. A session whose journal or catalog entry is
// damaged can be deleted too: that is often why it is being deleted.
func (e *env) rmOne(st *openedStore, input string, yes bool) int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := resolveID(ctx, st, input)
	if err != nil {
		return e.fail(err)
	}
	short := rig.ShortID(id.String())
	what := fmt.Sprintf("session %s", short)
	c, cerr := rig.ReadCatalog(ctx, st, id.String())
	if cerr == nil && c.Title != "" {
		what += fmt.Sprintf(" %q", textsafe.Line(c.Title))
	}
	journal := "its journal"
	tip, terr := rig.JournalTip(ctx, st, id)
	var corrupt *storage.CorruptError
	switch {
	case errors.As(terr, &corrupt):
		journal = "its damaged journal"
	case terr != nil:
		return e.fail(terr)
	case tip > 0:
		journal = fmt.Sprintf("its journal (%d records)", tip)
	case rig.IsNotFound(cerr):
		return e.fail(&NotFoundError{Input: input, Store: st.Dir()})
	}
	if !yes {
		ws := filepath.Join(st.WorkspacesDir(), id.String())
		msg := fmt.Sprintf("refusing to delete %s without --yes: %s, its catalog entry and its workspace directory %s (if it has one) would be removed for good",
			what, journal, ws)
		return e.fail(&UsageError{Cmd: "rm", Msg: msg, Hint: fmt.Sprintf("looprig %srm %s --yes", e.globalArgs(), short)})
	}
	d, err := rig.DeleteSession(ctx, st, st.WorkspacesDir(), id)
	if rig.IsNotFound(err) {
		return e.fail(&NotFoundError{Input: input, Store: st.Dir()})
	}
	if err != nil {
		return e.fail(err)
	}
	if e.json {
		o := newObj().set("id", d.ID).set("deleted", true).set("epoch", d.Epoch).
			set("journal", d.Journal).set("catalog", d.Catalog).set("workspace", nilIfEmpty(d.Workspace))
		e.writeJSONLine(o)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "deleted %s", what)
	if d.Workspace != "" {
		fmt.Fprintf(e.stdout, " and its workspace %s", textsafe.Line(d.Workspace))
	}
	fmt.Fprintln(e.stdout)
	return exitOK
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
