package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"text/tabwriter"

	"looprig/config"
	"looprig/fsstore"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
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

// leaseLost turns a session's latched fault into a *LeaseLostError when it
// is a lease loss.
func leaseLost(id string, err error) error {
	var jl *journal.JournalLeaseLostError
	var rl *rig.WorkspaceRootLeaseLostError
	switch {
	case errors.As(err, &jl):
		le := &LeaseLostError{Session: id, Epoch: jl.Epoch, Err: err}
		var ll *storage.LeaseLostError
		if errors.As(err, &ll) {
			le.Reason, le.NewEpoch = string(ll.Reason), ll.NewEpoch
		}
		return le
	case errors.As(err, &rl):
		return &LeaseLostError{Session: id, Epoch: rl.Epoch, Reason: "workspace root lease " + rl.Root, Err: err}
	}
	return err
}

// NotFoundError: no session with this id exists in the store.
type NotFoundError struct {
	Input string
	Store string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no session %q in store %s", e.Input, e.Store)
}

// ProfileGoneError: the profile a session was created with is no longer
// configured.
type ProfileGoneError struct {
	Session string
	Profile string
	Known   []string
}

func (e *ProfileGoneError) Error() string {
	return fmt.Sprintf("session %s was created with profile %q, which is not configured any more (known profiles: %s)",
		rig.ShortID(e.Session), e.Profile, strings.Join(e.Known, ", "))
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

// describe classifies err for the running command; the commands its
// hints suggest repeat the global flags given.
func (e *env) describe(err error) described {
	cmd, g := e.cmd, e.globalArgs()
	var (
		usage     *UsageError
		badID     *rig.BadIDError
		ambiguous *rig.AmbiguousIDError
		unknownP  *config.UnknownProfileError
		gone      *ProfileGoneError
		cfgErr    *config.Error
		storeErr  *StoreError
		rejected  *rig.RestoreRejectedError
		mismatch  *rig.ConfigMismatchError
		restore   *rig.RestoreError
		unknownS  *rig.UnknownSessionError
		notFound  *NotFoundError
		lifecycle *rig.LifecycleError
		lost      *LeaseLostError
		heldAny   *storage.LeaseHeldError
		decode    *journal.RecordDecodeError
		corrupt   *storage.CorruptError
		invalidP  *rig.InvalidProfileError
		stuck     *rig.EngineUnresponsiveError
	)
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
	case errors.As(err, &badID):
		return described{code: exitUsage, typ: "BadIDError", kind: "bad_id", message: err.Error(),
			fields: []kv{{"input", badID.Input}}, hint: "list the sessions and their ids with 'looprig ls'"}
	case errors.As(err, &ambiguous):
		return described{code: exitUsage, typ: "AmbiguousIDError", kind: "ambiguous_id", message: err.Error(),
			fields: []kv{{"input", ambiguous.Input}, {"matches", ambiguous.Matches}}, hint: "give more characters of the id"}
	case errors.As(err, &unknownP):
		return described{code: exitUsage, typ: "UnknownProfileError", kind: "unknown_profile", message: err.Error(),
			fields: []kv{{"profile", unknownP.Name}, {"known", unknownP.Known}},
			hint:   "define profiles in the configuration file ([profiles.NAME] tables); see 'looprig new --help'"}
	case errors.As(err, &gone):
		return described{code: exitRestore, typ: "ProfileGoneError", kind: "unknown_profile", message: err.Error(),
			fields: []kv{{"session", gone.Session}, {"profile", gone.Profile}, {"known", gone.Known}},
			hint:   fmt.Sprintf("restore it with another profile: looprig %s %s --rig NAME", orCmd(cmd, "restore"), rig.ShortID(gone.Session))}
	case errors.As(err, new(*rig.PersistenceOverlapError)): // before cfgErr: the file's overlap wraps it
		var overlap *rig.PersistenceOverlapError
		errors.As(err, &overlap)
		d := described{code: exitError, typ: "PersistenceOverlapError", kind: "persistence_overlap", message: err.Error(),
			fields: []kv{{"profile", overlap.Profile}, {"placement", string(overlap.Placement)}, {"relation", overlap.Relation},
				{"root", overlap.Root}, {"store", overlap.Store}, {"root_given", overlap.RootGiven}, {"store_given", overlap.StoreGiven}},
			hint: "move the store (--store DIR / $LOOPRIG_STORE) or the root so neither contains the other"}
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
	case errors.As(err, &rejected):
		id := rejected.Session.String()
		msg := fmt.Sprintf("restore of session %s refused: its configuration drifted from the profile (rejected by the %s decider)",
			rig.ShortID(id), rejected.Source)
		if rejected.Cause != nil {
			msg += ": " + rejected.Cause.Error()
		}
		return described{code: exitRestore, typ: "RestoreRejectedError", kind: "config_rejected", message: msg,
			fields: []kv{{"session", id}, {"source", rejected.Source}, {"changes", changesJSON(rejected.Assessment.Changes)}},
			detail: driftTable(rejected.Assessment.Changes),
			hint: fmt.Sprintf("restore it with the profile it was made with (--rig NAME, --placement/--root), or accept the drift on purpose: looprig %s%s %s --accept-drift",
				g, orCmd(cmd, "restore"), rig.ShortID(id))}
	case errors.As(err, &mismatch):
		id := mismatch.Session.String()
		return described{code: exitRestore, typ: "ConfigMismatchError", kind: "config_mismatch", message: err.Error(),
			fields: []kv{{"session", id}, {"persisted", mismatch.Persisted}, {"live", mismatch.Live}},
			hint:   "this session records only a fingerprint of its profile; restore it with exactly that profile (--rig NAME)"}
	case errors.As(err, &restore):
		return describeRestore(err, restore, g)
	case errors.As(err, &stuck):
		return described{code: exitError, typ: "EngineUnresponsiveError", kind: "engine_unresponsive", message: err.Error(),
			fields: []kv{{"session", stuck.Session.String()}, {"turn_id", stuck.Turn}, {"waited_ms", stuck.Waited.Milliseconds()}},
			hint: fmt.Sprintf("the turn's engine ignored the interrupt; the session is listed as crashed: restore it with 'looprig %srestore %s'",
				g, rig.ShortID(stuck.Session.String()))}
	case errors.As(err, &unknownS), errors.As(err, &notFound):
		return described{code: exitError, typ: "UnknownSessionError", kind: "unknown_session", message: err.Error(),
			hint: "list the sessions and their ids with 'looprig ls'"}
	case errors.As(err, &lifecycle):
		d := described{code: exitError, typ: "LifecycleError", kind: string(lifecycle.Stage), message: err.Error(),
			fields: []kv{{"stage", string(lifecycle.Stage)}}}
		var busy *rig.WorkspaceRootBusyError
		var seed *rig.SeedError
		switch {
		case errors.As(err, &busy):
			d.fields = append(d.fields, kv{"root", busy.Root}, kv{"holder_epoch", busy.HolderEpoch})
			d.hint = "another session works in that root; shut it down, or use another root"
		case errors.As(err, &seed):
			d.fields = append(d.fields, kv{"seed_path", seed.Path})
			d.hint = "fix the seed directory, or create the session without --seed"
		case errors.As(err, &invalidP):
			d.hint = "fix the profile in the configuration file"
		}
		return d
	case errors.As(err, &heldAny):
		d := described{code: exitLease, typ: "LeaseHeldError", kind: "lease_held", message: err.Error(),
			fields: []kv{{"holder_epoch", heldAny.HolderEpoch}, {"holder", map[string]any{"pid": heldAny.Holder.PID, "host": heldAny.Holder.Host}}},
			hint:   "shut it down in the process that holds it (or wait for it); see 'looprig ls'"}
		if id, ok := strings.CutPrefix(heldAny.Name, "sessions/"); ok {
			d.fields = append(d.fields, kv{"session", id})
		}
		return d
	case errors.As(err, &lost):
		return described{code: exitLease, typ: "LeaseLostError", kind: "lease_lost", message: err.Error(),
			fields: []kv{{"session", lost.Session}, {"epoch", lost.Epoch}, {"new_epoch", lost.NewEpoch}, {"reason", lost.Reason}},
			hint:   "another process broke the lease ('looprig lease break'); see who holds it with 'looprig ls'"}
	case errors.As(err, &decode):
		return described{code: exitError, typ: "RecordDecodeError", kind: "broken_journal", message: err.Error(),
			fields: []kv{{"seq", decode.Seq}, {"reason", decode.Reason}},
			hint:   "the journal cannot be trusted from this record on; the records before it are intact (see README: broken journal)"}
	case errors.As(err, &corrupt):
		hint := "looprig never repairs damaged data on its own; see README: broken journal"
		if isEpochFile(corrupt.Path) {
			hint = epochFileHint(corrupt.Path, g, "ID")
		}
		return described{code: exitError, typ: "CorruptError", kind: "corrupt", message: err.Error(),
			fields: []kv{{"name", corrupt.Name}, {"path", corrupt.Path}, {"offset", corrupt.Offset}},
			hint:   hint}
	case errors.As(err, &invalidP):
		return described{code: exitError, typ: "InvalidProfileError", kind: "invalid_profile", message: err.Error(),
			fields: []kv{{"profile", invalidP.Profile}, {"field", invalidP.Field}}}
	}
	return described{code: exitError, typ: "Error", kind: "error", message: err.Error()}
}

func describeRestore(err error, re *rig.RestoreError, g string) described {
	id := re.Session.String()
	short := rig.ShortID(id)
	d := described{code: exitRestore, typ: "RestoreError", kind: string(re.Kind), message: err.Error(),
		fields: []kv{{"session", id}}}
	var held *storage.LeaseHeldError
	var busy *rig.WorkspaceRootBusyError
	var unknown *rig.UnknownSessionError
	var corrupt *storage.CorruptError
	var decode *journal.RecordDecodeError
	switch {
	case errors.As(err, &busy): // before held: the root's LeaseHeldError is its cause
		d.code = exitLease
		who := "another session"
		if errors.As(err, &held) && held.Holder.PID != 0 {
			who = fmt.Sprintf("another session (pid %d@%s)", held.Holder.PID, held.Holder.Host)
		}
		d.message = fmt.Sprintf("session %s cannot be restored (%s): its workspace root %s is held by %s at root-lease epoch %d; nothing was changed",
			short, re.Kind, textsafe.Line(busy.Root), who, busy.HolderEpoch)
		d.fields = append(d.fields, kv{"cause_type", "WorkspaceRootBusyError"}, kv{"root", busy.Root}, kv{"holder_epoch", busy.HolderEpoch})
		if held != nil {
			d.fields = append(d.fields, kv{"holder", map[string]any{"pid": held.Holder.PID, "host": held.Holder.Host}})
		}
		d.hint = fmt.Sprintf("shut down the session working in that root (see 'looprig %sls'), or restore it into another root: looprig %srestore %s --root DIR --accept-drift", g, g, short)
	case errors.As(err, &corrupt) && isEpochFile(corrupt.Path):
		d.message = fmt.Sprintf("session %s cannot be restored (%s): its lease epoch file is unreadable: %v", short, re.Kind, re.Cause)
		d.fields = append(d.fields, kv{"cause_type", "CorruptError"}, kv{"path", corrupt.Path})
		d.hint = epochFileHint(corrupt.Path, g, short)
	case errors.As(err, &corrupt), errors.As(err, &decode):
		d.message = fmt.Sprintf("session %s cannot be restored (%s): its journal is damaged: %v", short, re.Kind, re.Cause)
		causeType := "RecordDecodeError"
		if corrupt != nil {
			causeType = "CorruptError"
		}
		d.fields = append(d.fields, kv{"cause_type", causeType})
		d.hint = fmt.Sprintf("looprig never repairs a journal on its own; see what is intact with 'looprig %slog %s' and README: broken journal", g, short)
	case errors.As(err, &held):
		d.code = exitLease
		who := "another process"
		if held.Holder.PID != 0 {
			who = fmt.Sprintf("pid %d@%s", held.Holder.PID, held.Holder.Host)
		}
		d.message = fmt.Sprintf("session %s is held by %s at epoch %d: restore refused (%s)", short, who, held.HolderEpoch, re.Kind)
		d.fields = append(d.fields, kv{"holder_epoch", held.HolderEpoch},
			kv{"holder", map[string]any{"pid": held.Holder.PID, "host": held.Holder.Host}})
		d.hint = fmt.Sprintf("wait for that process or stop it; if it is wedged, take the lease by force: looprig %slease break %s --yes", g, short)
	case errors.As(err, &unknown):
		d.message = fmt.Sprintf("restore refused (%s): %s", re.Kind, unknown.Error())
		d.fields[0] = kv{"session", nil}
		d.fields = append(d.fields, kv{"input", unknown.Input})
		d.hint = "list the sessions and their ids with 'looprig ls'"
	case re.Kind == rig.RestoreDiscoveryFailed:
		d.message = fmt.Sprintf("session %s cannot be restored (%s): %v", short, re.Kind, re.Cause)
		d.hint = "list the sessions of this store with 'looprig ls'; is --store the right store?"
	case re.Kind == rig.RestoreReplayFailed:
		d.message = fmt.Sprintf("session %s cannot be restored (%s): its journal is unreadable: %v", short, re.Kind, re.Cause)
		d.hint = fmt.Sprintf("the session is broken; read what is intact with 'looprig %slog %s' (see README: broken journal)", g, short)
	case re.Kind == rig.RestoreMaterializeFailed:
		d.message = fmt.Sprintf("session %s cannot be restored (%s): %v", short, re.Kind, re.Cause)
		d.hint = "its workspace cannot be prepared; check the profile's root, or --placement/--root"
	default:
		d.message = fmt.Sprintf("session %s cannot be restored (%s): %v", short, re.Kind, re.Cause)
		d.hint = fmt.Sprintf("see the journal with 'looprig %slog %s'", g, short)
	}
	return d
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

func changesJSON(cs []event.Change) []json.RawMessage {
	out := make([]json.RawMessage, len(cs))
	for i, c := range cs {
		out[i] = newObj().set("field", c.Field).set("persisted", c.Persisted).set("live", c.Live).set("level", c.Level).bytes()
	}
	return out
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
		e.writeJSONLine(newObj().raw("error", o.bytes()))
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

// isEpochFile reports whether path is a lease's epoch file.
func isEpochFile(path string) bool { return strings.HasSuffix(path, ".epoch") }

// epochFileHint says how to repair an unreadable epoch file by hand:
// looprig never resets an epoch itself, since a lower one could let a
// stale owner's writes through.
func epochFileHint(path, g, short string) string {
	return fmt.Sprintf("looprig never resets a lease epoch on its own; find the highest fence epoch with 'looprig %slog %s', "+
		"then replace %s with {\"epoch\":N} for an N above it (see SECURITY.md)", g, short, path)
}
