package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"text/tabwriter"
	"time"

	"looprig/config"
	"looprig/fsstore"
	"looprig/host"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/fault"
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

// Explanation classifies it for describe (fault.Explainer).
func (e *LeaseLostError) Explanation() fault.Explanation {
	return fault.Of(fault.KindLeaseLost, fault.Field{Name: "session", Value: e.Session}, fault.Field{Name: "epoch", Value: e.Epoch},
		fault.Field{Name: "new_epoch", Value: e.NewEpoch}, fault.Field{Name: "reason", Value: e.Reason})
}

// leaseLost turns a fault that explain classifies as a lost lease (a
// session's of this process, or the one a host reports of its session)
// into a *LeaseLostError about session id; any other err is returned as
// it is.
func leaseLost(id string, err error) error {
	x := explain.Explain(err)
	var lost *LeaseLostError
	if x.Kind != fault.KindLeaseLost || errors.As(err, &lost) {
		return err
	}
	f := explain.FactsOf(x)
	le := &LeaseLostError{Session: id, Epoch: f.Epoch, NewEpoch: f.NewEpoch, Reason: f.Reason, Err: err}
	if f.Root != "" {
		le.Reason = "workspace root lease " + f.Root
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

// Explanation classifies it for describe (fault.Explainer): kind
// unknown_session, as the runtime's *rig.UnknownSessionError.
func (e *NotFoundError) Explanation() fault.Explanation {
	return fault.Of(fault.KindUnknownSession)
}

// described is an error as the CLI reports it.
type described struct {
	code    int
	typ     string
	kind    string
	message string
	fields  []fault.Field // typed fields (host.AppendErrorJSON writes them in name order)
	detail  string        // extra lines for people (a drift table)
	hint    string        // one line
}

// describe words err for the running command. What a failure is, is said
// by its type: explain.Explain for the runtime's errors (describeRuntime
// words them), and the CLI's own errors (its command line, configuration
// file, store, a wait's outcome) by their describe methods. describe only
// orders them: the first that applies wins. The commands its hints
// suggest repeat the global flags given.
func (e *env) describe(err error) described {
	var (
		usage    *UsageError
		unknownP *config.UnknownProfileError
		cfgErr   *config.Error
		storeErr *StoreError
		waitErr  *WaitError
		notLive  *NotHostedError
		wtErr    *WorktreeError
	)
	x := explain.Explain(err)
	switch {
	case errors.As(err, &usage):
		return usage.describe(e)
	case x.Type == fault.TypeBadIDError, x.Type == fault.TypeAmbiguousIDError:
		return e.describeRuntime(err, x)
	case errors.As(err, &unknownP):
		return described{code: exitUsage, typ: "UnknownProfileError", kind: "unknown_profile", message: err.Error(),
			fields: []fault.Field{fault.Fact("profile", unknownP.Name), fault.Fact("known", unknownP.Known)},
			hint:   "define profiles in the configuration file ([profiles.NAME] tables); see 'looprig new --help'"}
	case x.Type == fault.TypeProfileGoneError:
		return e.describeRuntime(err, x)
	case x.Type == fault.TypePersistenceOverlapError: // before cfgErr: the file's overlap wraps it
		d := e.describeRuntime(err, x)
		if errors.As(err, &cfgErr) {
			d.fields = append(d.fields, fault.Fact("file", cfgErr.File), fault.Fact("line", cfgErr.Line), fault.Fact("field", cfgErr.Field))
		}
		return d
	case errors.As(err, &cfgErr):
		return described{code: exitError, typ: "ConfigError", kind: "config_invalid", message: err.Error(),
			fields: []fault.Field{fault.Fact("file", cfgErr.File), fault.Fact("line", cfgErr.Line), fault.Fact("field", cfgErr.Field)},
			hint:   "fix the file, or point --config at another one"}
	case errors.As(err, &storeErr):
		return storeErr.describe(err)
	case errors.As(err, &wtErr):
		return wtErr.describe(e.globalArgs())
	case errors.As(err, &waitErr):
		return waitErr.describe(err)
	case !x.Classified() && errors.As(err, &notLive):
		return notLive.describe(e, err)
	}
	return e.describeRuntime(err, x)
}

// describe says how a usage error is reported: exit 2, with its own hint
// or the command's --help.
func (u *UsageError) describe(e *env) described {
	help := "looprig --help"
	if u.Cmd != "" {
		help = "looprig " + u.Cmd + " --help"
		if u.Cmd == "lease" {
			help = "looprig lease break --help"
		}
	}
	hint := u.Hint
	if hint == "" {
		hint = "see '" + help + "'"
	}
	return described{code: exitUsage, typ: "UsageError", kind: "usage", message: prefixCmd(u.Cmd, u.Msg), hint: hint}
}

// describe says how a store that cannot be opened is reported (err is the
// whole chain, for its message): its kind and hint are its cause's.
func (s *StoreError) describe(err error) described {
	kind, hint := s.kind()
	return described{code: exitError, typ: "StoreError", kind: kind, message: err.Error(),
		fields: []fault.Field{fault.Fact("path", s.Path)}, hint: hint}
}

// kind is what is wrong with the store, by its cause: unsafe, of a format
// this looprig does not read, not permitted, or unavailable otherwise;
// and what to do about it.
func (s *StoreError) kind() (kind, hint string) {
	kind, hint = "store_unavailable", "choose another store directory with --store DIR or $LOOPRIG_STORE"
	var unsafe *fsstore.UnsafeStoreError
	var format *fsstore.FormatError
	switch {
	case errors.As(s.Err, &unsafe):
		kind = "unsafe_store"
		if unsafe.Fix != "" {
			hint = unsafe.Fix
		}
	case errors.As(s.Err, &format):
		kind = "unsupported_format"
		if format.Found == "" {
			hint = "that directory is not a looprig store; choose an empty or new directory with --store DIR"
		}
	case errors.Is(s.Err, fs.ErrPermission):
		kind = "permission_denied"
	}
	return kind, hint
}

// describe says how a wait that gave up is reported: its outcome is its
// kind, and its exit code its own.
func (w *WaitError) describe(err error) described {
	return described{code: w.Code, typ: "WaitError", kind: w.Outcome, message: err.Error(),
		fields: []fault.Field{fault.Fact("session", w.Session), fault.Fact("for", w.For)}}
}

// describe says how a session that no host serves is reported, with how
// to make it live.
func (n *NotHostedError) describe(e *env, err error) described {
	g, short := e.globalArgs(), rig.ShortID(n.Session)
	return described{code: exitError, typ: "NotHostedError", kind: "not_live", message: err.Error(),
		fields: []fault.Field{fault.Fact("session", n.Session)},
		hint: fmt.Sprintf("make it live in a host with 'looprig %srestore %s --detach' (or run a turn in it: 'looprig %srun %s -- INPUT'); 'looprig %sls' shows its state",
			g, short, g, short, g)}
}

// describeRuntime words the runtime's error err, which explain classified
// as x: the message and the hint are the CLI's, the type, kind, typed
// fields and what the hint is about are explain's.
func (e *env) describeRuntime(err error, x fault.Explanation) described {
	d := described{code: exitError, typ: x.Type.String(), kind: x.Kind.String(), message: err.Error(), fields: x.Fields}
	if !x.Classified() {
		return d
	}
	f := explain.FactsOf(x)
	short := rig.ShortID(f.Session)
	switch x.Type {
	case fault.TypeBadIDError, fault.TypeAmbiguousIDError:
		d.code = exitUsage
	case fault.TypeProfileGoneError:
		d.code = exitRestore
	case fault.TypeConfigMismatchError:
		d.code = exitRestore
		d.message += "; " + e.refusalWrote(x)
	case fault.TypeRestoreRejectedError:
		d.code = exitRestore
		d.message = fmt.Sprintf("restore of session %s refused: its configuration drifted from the profile (rejected by the %s decider)",
			short, f.Source)
		if f.Cause != "" {
			d.message += ": " + f.Cause
		}
		d.message += "; " + e.refusalWrote(x)
		d.detail = driftTable(f.Changes)
	case fault.TypeRestoreError:
		d.code = exitRestore
		if x.Remedy == fault.RemedyWaitOrBreakLease || x.Remedy == fault.RemedyShutDownRootHolder || x.Remedy == fault.RemedyStopEarlierTurn {
			d.code = exitLease
		}
		d.message = e.restoreMessage(err, x, short)
		if x.Remedy == fault.RemedyWaitOrBreakLease && e.holderHost > 0 {
			d.message = fmt.Sprintf("session %s is live in host pid %d on this machine: restore refused (%s)", short, e.holderHost, x.Kind)
		}
	case fault.TypeLeaseHeldError, fault.TypeLeaseLostError, fault.TypeHostUnresponsiveError, fault.TypeHandOffTimeoutError:
		d.code = exitLease
	}
	d.hint = e.hint(x, short)
	return d
}

// hint words the remedy of x, a failure of session short (a short id, ""
// when it names none): the CLI's words for every remedy, in one place.
// rootBusyHint is the way out of a root another session holds: for a
// restore, shut it down or restore elsewhere; for a new session, a
// worktree of its own when the directory is a git work tree, else another
// directory or a scratch one.
func (e *env) rootBusyHint(inRestore bool, root, short string) string {
	cmd, g := e.cmd, e.globalArgs()
	if inRestore {
		return fmt.Sprintf("shut down the session working in that root (see 'looprig %sls'), or restore it into another directory: %s",
			g, e.restoreCommand(short, append(append([]string{}, e.given.rig...), "--placement", string(rig.PlacementExclusive), "--root DIR --accept-drift")...))
	}
	if (cmd == "new" || cmd == "host") && inGitWorkTree(root) {
		return "another session works in that directory, a git work tree: give this session a worktree of its own with 'looprig " + g +
			"new --worktree' (a new branch beside the repository), or shut the other one down ('looprig " + g + "ls' shows it)"
	}
	return "another session works in that directory; shut it down ('looprig " + g + "ls' shows it), work elsewhere (--root DIR), or use --scratch"
}

func (e *env) hint(x fault.Explanation, short string) string {
	cmd, g := e.cmd, e.globalArgs()
	f := explain.FactsOf(x)
	inRestore := x.Type == fault.TypeRestoreError
	switch x.Remedy {
	case fault.RemedyListSessions:
		if inRestore && f.Input == nil {
			return "list the sessions of this store with 'looprig ls'; is --store the right store?"
		}
		return "list the sessions and their ids with 'looprig ls'"
	case fault.RemedyLongerPrefix:
		return "give more characters of the id"
	case fault.RemedyChooseProfile:
		return "restore it with another profile: " + e.restoreCommand(short, "--rig NAME")
	case fault.RemedyMoveStoreOrRoot:
		if cmd == "new" {
			return "move the store (--store DIR / $LOOPRIG_STORE) or the root so neither contains the other; or use --scratch for a private directory in the store"
		}
		return "move the store (--store DIR / $LOOPRIG_STORE) or the root so neither contains the other"
	case fault.RemedyChooseProjectRoot:
		return "cd into a project directory first (or give --root ~/src/myproject), or use --scratch for a private directory in the store"
	case fault.RemedyReviewDrift:
		return e.driftHint(f.Changes, short)
	case fault.RemedyOriginalProfile:
		return "this session records only a fingerprint of its profile; restore it with exactly that profile (--rig NAME)"
	case fault.RemedyShutDownRootHolder:
		return e.rootBusyHint(inRestore, f.Root, short)
	case fault.RemedyWaitOrBreakLease:
		if inRestore && e.holderHost > 0 {
			return fmt.Sprintf("it is live in its host: attach to it with 'looprig %sattach %s', run a turn with 'looprig %srun %s -- INPUT', or stop it with 'looprig %sstop %s'",
				g, short, g, short, g, short)
		}
		if inRestore {
			return fmt.Sprintf("wait for that process or stop it; if it is wedged, take the lease by force: looprig %slease break %s --yes", g, short)
		}
		return "shut it down in the process that holds it (or wait for it); see 'looprig ls'"
	case fault.RemedySeeHolder:
		return "another process broke the lease ('looprig lease break'); see who holds it with 'looprig ls'"
	case fault.RemedyInspectJournal:
		switch {
		case inRestore && f.CauseType != "":
			return fmt.Sprintf("looprig never repairs a journal on its own; see what is intact with 'looprig %slog %s' and README: broken journal", g, short)
		case inRestore:
			return fmt.Sprintf("the session is broken; read what is intact with 'looprig %slog %s' (see README: broken journal)", g, short)
		case x.Type == fault.TypeRecordDecodeError:
			return "the journal cannot be trusted from this record on; the records before it are intact (see README: broken journal)"
		}
		return "looprig never repairs damaged data on its own; see README: broken journal"
	case fault.RemedyRepairEpochFile:
		if inRestore {
			return epochFileHint(f.Path, g, short)
		}
		return epochFileHint(f.Path, g, "ID")
	case fault.RemedyRetry:
		if inRestore {
			return fmt.Sprintf("see the journal with 'looprig %slog %s'", g, short)
		}
	case fault.RemedyCheckWorkspace:
		return "its workspace cannot be prepared; check the profile's root, or --placement/--root"
	case fault.RemedyResolveDivergence:
		keep, use := e.restoreCommand(short, "--keep-workspace"), e.restoreCommand(short, "--use-checkpoint")
		if cmd == "take" {
			keep = fmt.Sprintf("looprig %stake %s --keep-workspace", g, orID(short))
			use = fmt.Sprintf("looprig %stake %s --use-checkpoint", g, orID(short))
		}
		return fmt.Sprintf("keep this directory as the session's workspace: %s; or take the checkpoint (this directory is moved aside, never deleted): %s",
			keep, use)
	case fault.RemedyFixProfile:
		return "fix the profile in the configuration file"
	case fault.RemedyFixSeed:
		return "fix the seed directory, or create the session without --seed"
	case fault.RemedyDefineEngine:
		return fmt.Sprintf("engine %q is not available here (known: %s): run it where that engine is, or choose a profile with a known one (--rig NAME)",
			f.Engine, strings.Join(f.Known, ", "))
	case fault.RemedyRestoreIt:
		return fmt.Sprintf("the turn's engine ignored the interrupt; the session is listed as crashed: restore it with 'looprig %srestore %s'", g, short)
	case fault.RemedyRestoreWhenStopped:
		return fmt.Sprintf("the session is shutting down; restore it once it has stopped to go on: looprig %srestore %s", g, orID(short))
	case fault.RemedyStopEarlierTurn:
		return fmt.Sprintf("wait for that turn to end, or stop it (SIGTERM to its process group, SIGKILL after 3 s): looprig %slease break %s --yes; then restore again",
			g, orID(short))
	case fault.RemedyAnswerAsAPerson:
		do := fmt.Sprintf("answer it yourself, in a terminal outside the session: the TUI (a/d), or 'looprig %sgate %s approve|deny'", g, orID(short))
		if f.Request == rig.RequestInput {
			do = fmt.Sprintf("type it yourself, in a terminal outside the session: the TUI (f), or 'looprig %ssend %s -- TEXT'", g, orID(short))
		}
		return fmt.Sprintf("%s; the attempt is in 'looprig %slog %s'", do, g, orID(short))
	case fault.RemedyBreakLease:
		if x.Type == fault.TypeHandOffTimeoutError {
			return fmt.Sprintf("take it again later (with --interrupt, its running turn is interrupted rather than awaited), or take it by force: looprig %slease break %s --yes, then looprig %stake %s",
				g, orID(short), g, orID(short))
		}
		wake := ""
		if f.PID > 0 {
			wake = fmt.Sprintf("if it was stopped (^Z, SIGSTOP), 'kill -CONT %d' wakes it; ", f.PID)
		}
		return fmt.Sprintf("%sor take the session from it by force (it is fenced off and its turn stopped): looprig %slease break %s --yes",
			wake, g, orID(short))
	case fault.RemedyFixSocketDir:
		if f.Fix != "" {
			return f.Fix
		}
		return "make the directory's parent writable, or set XDG_RUNTIME_DIR to a directory of your own with mode 0700"
	case fault.RemedyTakeWithoutWorkspace:
		anyway := fmt.Sprintf("take it anyway with 'looprig %stake %s --without-workspace'", g, orID(short))
		if f.Placement == string(rig.PlacementShared) {
			return anyway + " (its turns here run in this machine's shared root)"
		}
		return fmt.Sprintf("%s, or set checkpoint = \"stop\" in profile %q (the holder then checkpoints the workspace when it hands the session over)",
			anyway, f.Profile)
	}
	return ""
}

// restoreCommand is the command line that restores session short (a
// short id, "" for ID) with flags, as the command that failed would run
// it: `looprig [--store …] restore ID FLAGS`, or run's, which needs its
// input too (`-- INPUT`). Every hint that names a restore is one of these,
// so that what it says runs.
func (e *env) restoreCommand(short string, flags ...string) string {
	c := orCmd(e.cmd, "restore")
	line := "looprig " + e.globalArgs() + c + " " + orID(short)
	for _, f := range flags {
		line += " " + f
	}
	if c == "run" {
		line += " -- INPUT"
	}
	return line
}

// driftHint says how to go on from a restore refused for configuration
// drift cs: restore it as it was made (the profile it recorded, and the
// placement and root it worked in, which the drift names), or accept
// the drift on purpose. A drift of placement or root moves the workspace
// (rig.PlacementBefore): the accepted restore then works in the new place,
// and the hint says the files stay where they were.
func (e *env) driftHint(cs []event.Change, short string) string {
	accept := e.restoreCommand(short, append(e.given.all(), "--accept-drift")...)
	var made []string // the flags of a restore as it was made
	other := false    // warn-level drift besides the workspace's place
	profileKnown := false
	for _, c := range cs {
		switch {
		case c.Field == "profile" && c.Persisted != "":
			made = append(made, "--rig", textsafe.Line(shellQuote(c.Persisted)))
			profileKnown = true
		case c.Field == "placement" || c.Field == "root":
		case c.Level == event.LevelWarn:
			other = true
		}
	}
	placement, root, moved := rig.PlacementBefore(cs)
	if !moved {
		if !profileKnown {
			made = append(made, "--rig NAME")
		}
		return fmt.Sprintf("restore it with the profile it was made with: %s; or accept the drift on purpose: %s",
			e.restoreCommand(short, made...), accept)
	}
	if other && !profileKnown {
		made = append(made, "--rig NAME")
	}
	if placement != "" {
		made = append(made, "--placement", string(placement))
	}
	if root != "" && placement != rig.PlacementSession {
		made = append(made, "--root", textsafe.Line(shellQuote(root)))
	}
	where := "where it was made"
	if other {
		where = "with the profile it was made with, where it was made"
	}
	return fmt.Sprintf("restore it %s: %s; or accept the drift on purpose (its workspace moves, and the files where it worked stay there): %s",
		where, e.restoreCommand(short, made...), accept)
}

// orID is a short session id, or "ID" for a failure that names none.
func orID(short string) string {
	if short == "" {
		return "ID"
	}
	return short
}

// restoreMessage says why a restore failed, for people.
func (e *env) restoreMessage(err error, x fault.Explanation, short string) string {
	f := explain.FactsOf(x)
	var cause any = err
	if f.Cause != "" {
		cause = f.Cause // the same words whether the restore ran here or in a host
	}
	kind := x.Kind
	switch x.Remedy {
	case fault.RemedyShutDownRootHolder:
		who := "another session"
		if h := f.Holder; h.PID != 0 {
			who = fmt.Sprintf("another session (pid %d@%s)", h.PID, h.Host)
		}
		return fmt.Sprintf("session %s cannot be restored (%s): its workspace root %s is held by %s at root-lease epoch %d; %s",
			short, kind, textsafe.Line(f.Root), who, f.HolderEpoch, e.refusalWrote(x))
	case fault.RemedyRepairEpochFile:
		return fmt.Sprintf("session %s cannot be restored (%s): its lease epoch file is unreadable: %v", short, kind, cause)
	case fault.RemedyInspectJournal:
		if f.CauseType != "" {
			return fmt.Sprintf("session %s cannot be restored (%s): its journal is damaged: %v", short, kind, cause)
		}
		return fmt.Sprintf("session %s cannot be restored (%s): its journal is unreadable: %v", short, kind, cause)
	case fault.RemedyWaitOrBreakLease:
		who := "another process"
		if h := f.Holder; h.PID != 0 {
			who = fmt.Sprintf("pid %d@%s", h.PID, h.Host)
		}
		return fmt.Sprintf("session %s is held by %s at epoch %d: restore refused (%s)", short, who, f.HolderEpoch, kind)
	case fault.RemedyStopEarlierTurn:
		return fmt.Sprintf("session %s cannot be restored (%s): turn %d of its holder at epoch %d still runs on this machine (%s) as process group %d; %s",
			short, kind, f.Index, f.Epoch, textsafe.Line(f.Host), f.PGID, e.refusalWrote(x))
	case fault.RemedyResolveDivergence:
		return fmt.Sprintf("session %s cannot be restored (%s): %v; %s", short, kind, cause, e.refusalWrote(x))
	case fault.RemedyListSessions:
		var unknown *rig.UnknownSessionError
		if errors.As(err, &unknown) {
			return fmt.Sprintf("restore refused (%s): %s", kind, unknown.Error())
		}
	}
	return fmt.Sprintf("session %s cannot be restored (%s): %v", short, kind, cause)
}

// refusalWrote says what a restore refused before it changed anything
// (drift, a busy root, a turn still running, a diverged workspace) left
// behind:
// the record of the refusal in the journal, or nothing when the journal
// records this very refusal already; nothing at all when the restore was
// only checked (checkedOnly).
func (e *env) refusalWrote(x fault.Explanation) string {
	if e.checkedOnly {
		return "nothing was asked or written"
	}
	if explain.FactsOf(x).Journaled {
		return "nothing was changed: its journal records the refusal (a fence and RestoreErrored)"
	}
	return "nothing was written (its journal records this refusal already)"
}

func orCmd(cmd, def string) string {
	if cmd == "run" || cmd == "restore" || cmd == "take" {
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
		// The one error object of the wire and the ready report.
		o, err := host.AppendErrorJSON(nil, d.typ, d.kind, d.message, d.fields, d.hint)
		if err != nil {
			// A field no JSON holds (none of explain's typed facts): the
			// error without its fields, rather than no error.
			o, _ = host.AppendErrorJSON(nil, d.typ, d.kind, d.message, nil, d.hint)
		}
		e.writeJSON(newObj().raw("error", o))
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
	f := explain.FactsOf(x)
	id, h := f.Session, f.Holder
	if x.Remedy == fault.RemedyWaitOrBreakLease && id != "" && h.PID > 0 {
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
