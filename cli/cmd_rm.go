package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"looprig/internal/textsafe"
	"looprig/rig"
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
// would delete and refuses.
func (e *env) rmOne(st sessionStore, input string, yes bool) int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, tip, err := e.findExisting(ctx, st, input)
	if err != nil {
		return e.fail(err)
	}
	short := rig.ShortID(id.String())
	what := fmt.Sprintf("session %s", short)
	if c, err := rig.ReadCatalog(ctx, st, id.String()); err == nil && c.Title != "" {
		what += fmt.Sprintf(" %q", textsafe.Line(c.Title))
	}
	if !yes {
		ws := filepath.Join(st.WorkspacesDir(), id.String())
		msg := fmt.Sprintf("refusing to delete %s without --yes: its journal (%d records), its catalog entry and its workspace directory %s (if it has one) would be removed for good",
			what, tip, ws)
		return e.fail(&UsageError{Cmd: "rm", Msg: msg, Hint: fmt.Sprintf("looprig %srm %s --yes", e.globalArgs(), short)})
	}
	d, err := rig.DeleteSession(ctx, st, st.WorkspacesDir(), id)
	if err != nil {
		return e.fail(fmt.Errorf("delete %s: %w", what, err))
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
