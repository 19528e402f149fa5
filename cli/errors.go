package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"looprig/host"
	"strings"
	"text/tabwriter"
	"time"

	"looprig/config"
	"looprig/fsstore"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/storage"
)

// UsageError is a command line that looprig cannot run.
type UsageError struct {
	Cmd  string // the subcommand, "" for the global flags
	Msg  string
	Hint string
}

func (e *UsageError) Error() string { return e.Msg }

func usageErr(cmd, msg string) *UsageError { return &UsageError{Cmd: cmd, Msg: msg} }

// StoreError is a store directory that cannot be opened.
type StoreError struct {
	Path string
	Err  error
}

func (e *StoreError) Error() string {
	var unsafe *fsstore.UnsafeStoreError
	var format *fsstore.FormatError
	if errors.As(e.Err, &unsafe) || errors.As(e.Err, &format) {
		return e.Err.Error()
	}
	var pe *fs.PathError
	if errors.As(e.Err, &pe) {
		return fmt.Sprintf("cannot open store %s: %s %s: %v", e.Path, pe.Op, pe.Path, pe.Err)
	}
	return fmt.Sprintf("cannot open store %s: %v", e.Path, e.Err)
}

func (e *StoreError) Unwrap() error { return e.Err }

// LeaseLostError: a live session of this process lost its lease (another
// process broke it); the session stopped writing.
type LeaseLostError struct {
	Session  string
	Epoch    uint64
	NewEpoch uint64
	Reason   string
	Err      error
}

func (e *LeaseLostError) Error() string {
	msg := fmt.Sprintf("LEASE LOST: session %s lost its lease at epoch %d", rig.ShortID(e.Session), e.Epoch)
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	if e.NewEpoch > 0 {
		msg += fmt.Sprintf("; epoch %d holds it now", e.NewEpoch)
	}
	return msg + "; this process stopped writing to it"
}

func (e *LeaseLostError) Unwrap() error { return e.Err }

// Explanation classifies it for describe (explain.Explainer).
func (e *LeaseLostError) Explanation() explain.Explanation {
	return explain.Of(explain.KindLeaseLost, explain.Field{Name: "session", Value: e.Session}, explain.Field{Name: "epoch", Value: e.Epoch},
		explain.Field{Name: "new_epoch", Value: e.NewEpoch}, explain.Field{Name: "reason", Value: e.Reason})
}

// leaseLost turns a fault that explain classifies as a lost lease (a
// session's of this process, or the one a host reports of its session)
// into a *LeaseLostError about session id; any other err is returned as
// it is.
func leaseLost(id string, err error) error {
	x := explain.Explain(err)
	var lost *LeaseLostError
	if x.Kind != explain.KindLeaseLost || errors.As(err, &lost) {
		return err
	}
	le := &LeaseLostError{Session: id, Err: err}
	epoch, _ := x.Number("epoch")
	newEpoch, _ := x.Number("new_epoch")
	le.Epoch, le.NewEpoch = uint64(epoch), uint64(newEpoch)
	reason, _ := x.Field("reason")
	le.Reason, _ = reason.(string)
	if root, ok := x.Field("root"); ok {
		le.Reason = fmt.Sprintf("workspace root lease %v", root)
	}
	return le
}

// NotFoundError: no session with this id exists in the store.
type NotFoundError struct {
	Input string
	Store string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no session %q in store %s", e.Input, e.Store)
}

// Explanation classifies it for describe (explain.Explainer): kind
// unknown_session, as the runtime's *rig.UnknownSessionError.
func (e *NotFoundError) Explanation() explain.Explanation {
	return explain.Of(explain.KindUnknownSession)
}

// described is an error as the CLI reports it.
type described struct {
	code    int
	typ     string
	kind    string
	message string
	fields  []kv   // typed fields, in order
	detail  string // extra lines for people (a drift table)
	hint    string // one line
}

type kv struct {
	k string
	v any
}

// describe classifies err for the running command: the errors of the
// CLI's own input (its command line, configuration file and store) here,
// everything else through explain.Explain (describeRuntime words them).
// The commands its hints suggest repeat the global flags given.
func (e *env) describe(err error) described {
	var (
		usage    *UsageError
		unknownP *config.UnknownProfileError
		cfgErr   *config.Error
		storeErr *StoreError
		waitErr  *WaitError
		notLive  *NotHostedError
	)
	x := explain.Explain(err)
	switch {
	case errors.As(err, &usage):
		help := "looprig --help"
		if usage.Cmd != "" {
			help = "looprig " + usage.Cmd + " --help"
			if usage.Cmd == "lease" {
				help = "looprig lease break --help"
			}
		}
		hint := usage.Hint
		if hint == "" {
			hint = "see '" + help + "'"
		}
		return described{code: exitUsage, typ: "UsageError", kind: "usage", message: prefixCmd(usage.Cmd, usage.Msg), hint: hint}
	case x.Type == explain.TypeBadIDError, x.Type == explain.TypeAmbiguousIDError:
		return e.describeRuntime(err, x)
	case errors.As(err, &unknownP):
		return described{code: exitUsage, typ: "UnknownProfileError", kind: "unknown_profile", message: err.Error(),
			fields: []kv{{"profile", unknownP.Name}, {"known", unknownP.Known}},
			hint:   "define profiles in the configuration file ([profiles.NAME] tables); see 'looprig new --help'"}
	case x.Type == explain.TypeProfileGoneError:
		return e.describeRuntime(err, x)
	case x.Type == explain.TypePersistenceOverlapError: // before cfgErr: the file's overlap wraps it
		d := e.describeRuntime(err, x)
		if errors.As(err, &cfgErr) {
			d.fields = append(d.fields, kv{"file", cfgErr.File}, kv{"line", cfgErr.Line}, kv{"field", cfgErr.Field})
		}
		return d
	case errors.As(err, &cfgErr):
		return described{code: exitError, typ: "ConfigError", kind: "config_invalid", message: err.Error(),
			fields: []kv{{"file", cfgErr.File}, {"line", cfgErr.Line}, {"field", cfgErr.Field}},
			hint:   "fix the file, or point --config at another one"}
	case errors.As(err, &storeErr):
		kind := "store_unavailable"
		hint := "choose another store directory with --store DIR or $LOOPRIG_STORE"
		var unsafe *fsstore.UnsafeStoreError
		var format *fsstore.FormatError
		switch {
		case errors.As(err, &unsafe):
			kind = "unsafe_store"
			if unsafe.Fix != "" {
				hint = unsafe.Fix
			}
		case errors.As(err, &format):
			kind = "unsupported_format"
			if format.Found == "" {
				hint = "that directory is not a looprig store; choose an empty or new directory with --store DIR"
			}
		case errors.Is(err, fs.ErrPermission):
			kind = "permission_denied"
		}
		return described{code: exitError, typ: "StoreError", kind: kind, message: err.Error(),
			fields: []kv{{"path", storeErr.Path}}, hint: hint}
	case errors.As(err, &waitErr):
		return described{code: waitErr.Code, typ: "WaitError", kind: waitErr.Outcome, message: err.Error(),
			fields: []kv{{"session", waitErr.Session}, {"for", waitErr.For}}}
	case !x.Classified() && errors.As(err, &notLive):
		g, short := e.globalArgs(), rig.ShortID(notLive.Session)
		return described{code: exitError, typ: "NotHostedError", kind: "not_live", message: err.Error(),
			fields: []kv{{"session", notLive.Session}},
			hint: fmt.Sprintf("make it live in a host with 'looprig %srestore %s --detach' (or run a turn in it: 'looprig %srun %s -- INPUT'); 'looprig %sls' shows its state",
				g, short, g, short, g)}
	}
	return e.describeRuntime(err, x)
}

// describeRuntime words the runtime's error err, which explain classified
// as x: the message and the hint are the CLI's, the type, kind, typed
// fields and what the hint is about are explain's.
func (e *env) describeRuntime(err error, x explain.Explanation) described {
	d := described{code: exitError, typ: x.Type.String(), kind: x.Kind.String(), message: err.Error(), fields: fieldsOf(x)}
	if !x.Classified() {
		return d
	}
	session, _ := x.Field("session")
	id, _ := session.(string)
	short := rig.ShortID(id)
	switch x.Type {
	case explain.TypeBadIDError, explain.TypeAmbiguousIDError:
		d.code = exitUsage
	case explain.TypeProfileGoneError, explain.TypeConfigMismatchError:
		d.code = exitRestore
	case explain.TypeRestoreRejectedError:
		d.code = exitRestore
		source, _ := x.Field("source")
		d.message = fmt.Sprintf("restore of session %s refused: its configuration drifted from the profile (rejected by the %v decider)",
			short, source)
		if cause, ok := x.Field("cause"); ok {
			d.message += fmt.Sprintf(": %v", cause)
		}
		changes, _ := x.Field("changes")
		cs, _ := changes.([]event.Change)
		d.detail = driftTable(cs)
	case explain.TypeRestoreError:
		d.code = exitRestore
		if x.Remedy == explain.RemedyWaitOrBreakLease || x.Remedy == explain.RemedyShutDownRootHolder || x.Remedy == explain.RemedyStopEarlierTurn {
			d.code = exitLease
		}
		d.message = restoreMessage(err, x, short)
		if x.Remedy == explain.RemedyWaitOrBreakLease && e.holderHost > 0 {
			d.message = fmt.Sprintf("session %s is live in host pid %d on this machine: restore refused (%s)", short, e.holderHost, x.Kind)
		}
	case explain.TypeLeaseHeldError, explain.TypeLeaseLostError:
		d.code = exitLease
	}
	d.hint = e.hint(x, short)
	return d
}

// hint words the remedy of x, a failure of session short (a short id, ""
// when it names none): the CLI's words for every remedy, in one place.
func (e *env) hint(x explain.Explanation, short string) string {
	cmd, g := e.cmd, e.globalArgs()
	inRestore := x.Type == explain.TypeRestoreError
	switch x.Remedy {
	case explain.RemedyListSessions:
		if _, named := x.Field("input"); inRestore && !named {
			return "list the sessions of this store with 'looprig ls'; is --store the right store?"
		}
		return "list the sessions and their ids with 'looprig ls'"
	case explain.RemedyLongerPrefix:
		return "give more characters of the id"
	case explain.RemedyChooseProfile:
		return fmt.Sprintf("restore it with another profile: looprig %s %s --rig NAME", orCmd(cmd, "restore"), short)
	case explain.RemedyMoveStoreOrRoot:
		return "move the store (--store DIR / $LOOPRIG_STORE) or the root so neither contains the other"
	case explain.RemedyReviewDrift:
		return fmt.Sprintf("restore it with the profile it was made with (--rig NAME, --placement/--root), or accept the drift on purpose: looprig %s%s %s --accept-drift",
			g, orCmd(cmd, "restore"), short)
	case explain.RemedyOriginalProfile:
		return "this session records only a fingerprint of its profile; restore it with exactly that profile (--rig NAME)"
	case explain.RemedyShutDownRootHolder:
		if inRestore {
			return fmt.Sprintf("shut down the session working in that root (see 'looprig %sls'), or restore it into another root: looprig %srestore %s --root DIR --accept-drift", g, g, short)
		}
		return "another session works in that root; shut it down, or use another root"
	case explain.RemedyWaitOrBreakLease:
		if inRestore && e.holderHost > 0 {
			return fmt.Sprintf("it is live in its host: attach to it with 'looprig %sattach %s', run a turn with 'looprig %srun %s -- INPUT', or stop it with 'looprig %sstop %s'",
				g, short, g, short, g, short)
		}
		if inRestore {
			return fmt.Sprintf("wait for that process or stop it; if it is wedged, take the lease by force: looprig %slease break %s --yes", g, short)
		}
		return "shut it down in the process that holds it (or wait for it); see 'looprig ls'"
	case explain.RemedySeeHolder:
		return "another process broke the lease ('looprig lease break'); see who holds it with 'looprig ls'"
	case explain.RemedyInspectJournal:
		_, damaged := x.Field("cause_type")
		switch {
		case inRestore && damaged:
			return fmt.Sprintf("looprig never repairs a journal on its own; see what is intact with 'looprig %slog %s' and README: broken journal", g, short)
		case inRestore:
			return fmt.Sprintf("the session is broken; read what is intact with 'looprig %slog %s' (see README: broken journal)", g, short)
		case x.Type == explain.TypeRecordDecodeError:
			return "the journal cannot be trusted from this record on; the records before it are intact (see README: broken journal)"
		}
		return "looprig never repairs damaged data on its own; see README: broken journal"
	case explain.RemedyRepairEpochFile:
		path, _ := x.Field("path")
		p, _ := path.(string)
		if inRestore {
			return epochFileHint(p, g, short)
		}
		return epochFileHint(p, g, "ID")
	case explain.RemedyRetry:
		if inRestore {
			return fmt.Sprintf("see the journal with 'looprig %slog %s'", g, short)
		}
	case explain.RemedyCheckWorkspace:
		return "its workspace cannot be prepared; check the profile's root, or --placement/--root"
	case explain.RemedyFixProfile:
		return "fix the profile in the configuration file"
	case explain.RemedyFixSeed:
		return "fix the seed directory, or create the session without --seed"
	case explain.RemedyDefineEngine:
		name, _ := x.Field("engine")
		known, _ := x.Field("known")
		ks, _ := known.([]string)
		return fmt.Sprintf("engine %q is not available here (known: %s): run it where that engine is, or choose a profile with a known one (--rig NAME)",
			name, strings.Join(ks, ", "))
	case explain.RemedyRestoreIt:
		return fmt.Sprintf("the turn's engine ignored the interrupt; the session is listed as crashed: restore it with 'looprig %srestore %s'", g, short)
	case explain.RemedyRestoreWhenStopped:
		return fmt.Sprintf("the session is shutting down; restore it once it has stopped to go on: looprig %srestore %s", g, orID(short))
	case explain.RemedyStopEarlierTurn:
		return fmt.Sprintf("wait for that turn to end, or stop it (SIGTERM to its process group, SIGKILL after 3 s): looprig %slease break %s --yes; then restore again",
			g, orID(short))
	}
	return ""
}

// orID is a short session id, or "ID" for a failure that names none.
func orID(short string) string {
	if short == "" {
		return "ID"
	}
	return short
}

// restoreMessage says why a restore failed, for people.
func restoreMessage(err error, x explain.Explanation, short string) string {
	var cause any = err
	if c, ok := x.Field("cause"); ok {
		cause = c // the same words whether the restore ran here or in a host
	}
	kind := x.Kind
	field := func(name string) any { v, _ := x.Field(name); return v }
	_, damaged := x.Field("cause_type")
	switch x.Remedy {
	case explain.RemedyShutDownRootHolder:
		who := "another session"
		if h, ok := field("holder").(storage.Holder); ok && h.PID != 0 {
			who = fmt.Sprintf("another session (pid %d@%s)", h.PID, h.Host)
		}
		root, _ := field("root").(string)
		return fmt.Sprintf("session %s cannot be restored (%s): its workspace root %s is held by %s at root-lease epoch %d; nothing was changed",
			short, kind, textsafe.Line(root), who, field("holder_epoch"))
	case explain.RemedyRepairEpochFile:
		return fmt.Sprintf("session %s cannot be restored (%s): its lease epoch file is unreadable: %v", short, kind, cause)
	case explain.RemedyInspectJournal:
		if damaged {
			return fmt.Sprintf("session %s cannot be restored (%s): its journal is damaged: %v", short, kind, cause)
		}
		return fmt.Sprintf("session %s cannot be restored (%s): its journal is unreadable: %v", short, kind, cause)
	case explain.RemedyWaitOrBreakLease:
		who := "another process"
		if h, ok := field("holder").(storage.Holder); ok && h.PID != 0 {
			who = fmt.Sprintf("pid %d@%s", h.PID, h.Host)
		}
		return fmt.Sprintf("session %s is held by %s at epoch %d: restore refused (%s)", short, who, field("holder_epoch"), kind)
	case explain.RemedyStopEarlierTurn:
		host, _ := field("host").(string)
		return fmt.Sprintf("session %s cannot be restored (%s): turn %v of its holder at epoch %v still runs on this machine (%s) as process group %v; nothing was changed",
			short, kind, field("index"), field("epoch"), textsafe.Line(host), field("pgid"))
	case explain.RemedyListSessions:
		var unknown *rig.UnknownSessionError
		if errors.As(err, &unknown) {
			return fmt.Sprintf("restore refused (%s): %s", kind, unknown.Error())
		}
	}
	return fmt.Sprintf("session %s cannot be restored (%s): %v", short, kind, cause)
}

// fieldsOf turns explain's typed fields into the CLI's JSON fields: a
// holder is {"pid","host"}, a drift its changes' objects.
func fieldsOf(x explain.Explanation) []kv {
	out := make([]kv, len(x.Fields))
	for i, f := range x.Fields {
		v := f.Value
		switch t := v.(type) {
		case storage.Holder:
			v = holderJSON{Host: t.Host, PID: t.PID}
		case []event.Change:
			v = changes(t)
		}
		out[i] = kv{f.Name, v}
	}
	return out
}

func orCmd(cmd, def string) string {
	if cmd == "run" || cmd == "restore" {
		return cmd
	}
	return def
}

func prefixCmd(cmd, msg string) string {
	if cmd == "" {
		return msg
	}
	if cmd == "lease" {
		return "lease break: " + msg
	}
	return cmd + ": " + msg
}

// driftTable renders configuration changes for people.
func driftTable(cs []event.Change) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  FIELD\tRECORDED\tNOW\tLEVEL")
	for _, c := range cs {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", textsafe.Line(c.Field), orDash(clip(textsafe.Line(c.Persisted), 40)),
			orDash(clip(textsafe.Line(c.Live), 40)), textsafe.Line(c.Level))
	}
	w.Flush()
	return strings.TrimRight(b.String(), "\n")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// fail reports err in the command's output mode and returns its exit
// code.
func (e *env) fail(err error) int {
	d := e.describe(err)
	e.report(d)
	return d.code
}

// failRun is fail for run: a failure of looprig itself exits 125, a usage
// error 2.
func (e *env) failRun(err error) int {
	if code := e.fail(err); code == exitUsage {
		return exitUsage
	}
	return exitRunFailed
}

func (e *env) report(d described) {
	if e.json {
		o := newObj().set("type", d.typ).set("kind", d.kind).set("message", d.message)
		for _, f := range d.fields {
			o.set(f.k, f.v)
		}
		if d.hint != "" {
			o.set("hint", d.hint)
		}
		e.writeJSON(newObj().raw("error", o.bytes()))
		return
	}
	var b strings.Builder
	b.WriteString("looprig: ")
	b.WriteString(textsafe.Sanitize(d.message))
	b.WriteString("\n")
	if d.detail != "" {
		b.WriteString(d.detail)
		b.WriteString("\n")
	}
	if d.hint != "" {
		b.WriteString("hint: ")
		b.WriteString(textsafe.Line(d.hint))
		b.WriteString("\n")
	}
	fmt.Fprint(e.stderr, b.String())
}

// epochFileHint says how to repair an unreadable epoch file by hand:
// looprig never resets an epoch itself, since a lower one could let a
// stale owner's writes through.
func epochFileHint(path, g, short string) string {
	return fmt.Sprintf("looprig never resets a lease epoch on its own; find the highest fence epoch with 'looprig %slog %s', "+
		"then replace %s with {\"epoch\":N} for an N above it (see SECURITY.md)", g, short, path)
}

// failRestore reports a failed restore as fail does; when the session is
// held by a host that serves it on this machine, it says so, and how to
// use it, rather than suggesting to break a healthy host's lease.
func (c *call) failRestore(err error) int {
	x := explain.Explain(err)
	session, _ := x.Field("session")
	id, _ := session.(string)
	holder, _ := x.Field("holder")
	h, _ := holder.(storage.Holder)
	if x.Remedy == explain.RemedyWaitOrBreakLease && id != "" && h.PID > 0 {
		if key, kerr := storeKey(c.st); kerr == nil {
			ctx, cancel := context.WithTimeout(c.ctx, 2*time.Second)
			if hello, perr := host.Probe(ctx, key, id, host.WithClientVersion(Version)); perr == nil && hello.PID == h.PID {
				c.holderHost = hello.PID
			}
			cancel()
		}
	}
	return c.fail(err)
}
