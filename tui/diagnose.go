package tui

import (
	"errors"
	"strconv"
	"strings"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/storage"
)

// diagnosis is how the errors strip explains a failure: a badge (the
// failure's kind), a headline, the stage, the cause chain, an optional
// table (drift) and a one-line remedy. Every string is sanitized.
//
// What a failure is (its kind, stage, typed facts and remedy) is
// rig/explain's classification, shared with the CLI; only the words and
// the layout are the TUI's.
type diagnosis struct {
	kind     string
	headline string
	stage    string
	chain    []string
	table    []string
	remedy   string
}

// stageText says what each stage of a restore does.
var stageText = map[explain.Kind]string{
	explain.KindDiscoveryFailed:   "discovery — finding the journal and its SessionStarted",
	explain.KindLeaseFailed:       "lease — taking the session lease",
	explain.KindJournalFailed:     "journal — appending the opening fence",
	explain.KindTurnRunning:       "turn check — looking for a turn of an earlier holder still running here",
	explain.KindReplayFailed:      "replay — reading the journal back",
	explain.KindAppendFailed:      "append — journaling the restore records",
	explain.KindLoopFailed:        "loop — rebuilding the root loop",
	explain.KindRuntimeFailed:     "runtime — building the engine",
	explain.KindMaterializeFailed: "materialize — placing the workspace",
	explain.KindContextDone:       "the restore ran out of time or was cancelled",
}

// facts reads the typed fields of an explanation.
type facts struct{ x explain.Explanation }

func (f facts) has(name string) bool { _, ok := f.x.Field(name); return ok }

func (f facts) str(name string) string {
	v, _ := f.x.Field(name)
	s, _ := v.(string)
	return s
}

func (f facts) num(name string) string {
	if n, ok := f.x.Number(name); ok {
		return strconv.FormatInt(n, 10)
	}
	return "?"
}

func (f facts) strs(name string) []string {
	v, _ := f.x.Field(name)
	s, _ := v.([]string)
	return s
}

func (f facts) holder(name string) (storage.Holder, bool) {
	v, _ := f.x.Field(name)
	h, ok := v.(storage.Holder)
	return h, ok && (h.PID != 0 || h.Host != "")
}

func diagnose(err error) diagnosis {
	x := explain.Explain(err)
	f := facts{x}
	d := diagnosis{kind: "ERROR", chain: causeChain(err)}
	if x.Classified() {
		d.kind = x.Kind.String()
	}
	// What only starting or dialling a host fails with: worded from the
	// error's own facts (versions, pid, exit status).
	var (
		mismatch *host.ProtocolMismatchError
		exited   *host.HostExitedError
	)
	switch {
	case errors.As(err, &mismatch):
		d.kind = "protocol_mismatch"
		d.headline = "its host (pid " + strconv.Itoa(mismatch.PID) + ") speaks protocol " + strconv.Itoa(mismatch.Server) +
			", this looprig speaks " + strconv.Itoa(mismatch.Client)
		d.chain = nil
		d.remedy = "the session goes on in the old host: " + clean(mismatch.Hint)
		return d
	case errors.As(err, &exited):
		d.kind = "host_exited"
		d.headline = "the host process (pid " + strconv.Itoa(exited.PID) + ") ended before it served the session: " + clean(exited.Status)
		d.chain = nil
		d.remedy = "its log, <session id>.log in the store's socket directory, says why; the TUI's log has the command"
		return d
	}
	restore := x.Type == explain.TypeRestoreError
	switch x.Type {
	case explain.TypeRestoreRejectedError:
		src := f.str("source")
		if src == "" {
			src = "the decider"
		}
		d.headline = "configuration drift rejected by " + clean(src)
		d.stage = "configuration check — before anything of the restore was written"
		changes, _ := f.x.Field("changes")
		cs, _ := changes.([]event.Change)
		d.table = driftTable(cs)
		d.chain = nil
		var rejected *rig.RestoreRejectedError
		if errors.As(err, &rejected) && rejected.Cause != nil {
			d.chain = []string{errText(rejected.Cause)}
		}
		d.remedy = "r reviews the changes and can accept them (restore under the current profile)"
		return d
	case explain.TypeConfigMismatchError:
		d.headline = "configuration fingerprint changed (session recorded without a manifest)"
		d.stage = "configuration check — before anything of the restore was written"
		d.remedy = "restore it with the profile it was created with; fingerprint-only sessions cannot adopt drift"
		return d
	case explain.TypeProfileGoneError:
		profile := strconv.Quote(clean(f.str("profile")))
		d.headline = "the profile it was created with, " + profile + ", is not configured any more"
		d.stage = "profile — finding the one it recorded, before anything was written"
		d.chain = nil // the headline says it all
		d.remedy = "nothing was changed: define " + profile + " in config.toml again (known: " +
			clean(strings.Join(f.strs("known"), ", ")) + "), or restore it with another profile: looprig restore " +
			rig.ShortID(f.str("session")) + " --rig NAME"
		return d
	case explain.TypeRestoreError:
		d.headline = x.Kind.String()
		d.stage = stageText[x.Kind]
		if len(d.chain) > 1 {
			d.chain = d.chain[1:] // the first layer only repeats the kind
		}
	case explain.TypeLifecycleError:
		d.kind = "create_failed"
		d.headline = "new session failed at stage " + x.Kind.String()
		d.stage = x.Kind.String()
	}

	switch x.Remedy {
	case explain.RemedyShutDownRootHolder:
		who := "another session"
		h, ok := f.holder("holder")
		if !ok && x.Type == explain.TypeLifecycleError {
			// explain names the holder of a busy root for a restore, not
			// (yet) for a creation: read it from the cause.
			var held *storage.LeaseHeldError
			if errors.As(err, &held) {
				h, ok = held.Holder, held.Holder.PID != 0 || held.Holder.Host != ""
			}
		}
		if ok {
			who = "another session (" + clean(holderText(h)) + ")"
		}
		root := "a workspace root"
		if r := f.str("root"); r != "" {
			root = "workspace root " + clean(r)
		}
		d.headline = root + " is held by " + who + " at epoch " + f.num("holder_epoch")
		if restore {
			d.stage = "lease — taking the workspace root's lease, before anything of the restore was written"
		}
		if r := f.str("root"); r != "" {
			d.remedy = "another session works in " + clean(r) + ": shut it down first (X on it), then r"
		} else {
			d.remedy = "another session works in that workspace root: shut it down first (X on it), then r"
		}
	case explain.RemedyWaitOrBreakLease:
		who := "another process"
		if h, ok := f.holder("holder"); ok {
			who = clean(holderText(h))
		}
		epoch := f.num("holder_epoch")
		d.headline = "the lease is held by " + who + " at epoch " + epoch
		d.remedy = "held by " + who + " (epoch " + epoch + "): B breaks the lease and takes the session over"
	case explain.RemedyInspectJournal:
		if where := journalPlace(f); where != "" {
			d.headline = "the journal is corrupt at " + where
			d.remedy = "nothing was modified: no record was repaired, truncated or rewritten; inspect it with `looprig log` (the session stays broken)"
		} else {
			d.remedy = "the journal could not be read back; nothing was modified: r retries, `looprig log` shows it"
		}
	case explain.RemedyRepairEpochFile:
		d.headline = "the lease epoch file " + clean(f.str("path")) + " is unreadable"
		d.remedy = "looprig never resets a lease epoch on its own: find the highest fence epoch with `looprig log`, then write {\"epoch\":N} above it into that file (see SECURITY.md)"
	case explain.RemedyDefineEngine:
		d.remedy = "engine " + strconv.Quote(clean(f.str("engine"))) + " is unknown here (known: " + clean(strings.Join(f.strs("known"), ", ")) + "): define it in config.toml"
	case explain.RemedyListSessions:
		switch {
		case x.Type == explain.TypeUnknownSessionError || f.has("input"):
			d.remedy = "the session is gone from the store"
		default:
			d.remedy = "there is nothing to restore (no journal or no SessionStarted); nothing was modified"
		}
	case explain.RemedyLongerPrefix:
		d.remedy = "the id matches several sessions: give more of it"
	case explain.RemedyRetry:
		switch x.Kind {
		case explain.KindLeaseFailed:
			d.remedy = "the lease could not be taken: r retries"
		case explain.KindJournalFailed:
			d.remedy = "another writer may have fenced the journal meanwhile: r retries"
		case explain.KindContextDone:
			d.remedy = "the restore timed out: r retries"
		default:
			d.remedy = "r retries; the log file has the details"
		}
	case explain.RemedyCheckWorkspace:
		d.remedy = "the workspace could not be placed: check the profile's root and the disk, then r"
	case explain.RemedyFixProfile:
		d.remedy = "the profile cannot run: fix it in config.toml"
	case explain.RemedyFixSeed:
		d.remedy = "the seed directory is refused: fix it, or create the session without a seed"
	case explain.RemedyMoveStoreOrRoot:
		d.remedy = "a workspace root and the store overlap: move one so that neither contains the other"
	case explain.RemedySeeHolder:
		d.remedy = "another process took the lease: the list shows who holds it now"
	case explain.RemedyRestoreIt:
		d.remedy = "the turn's engine ignored the interrupt; the session is listed as crashed: r restores it"
	case explain.RemedyRestoreWhenStopped:
		d.remedy = "the session is shutting down: r restores it once it has stopped"
	case explain.RemedyStopEarlierTurn:
		d.headline = "turn " + f.num("index") + " of its holder at epoch " + f.num("epoch") + " still runs here as process group " + f.num("pgid")
		d.remedy = "its processes would work in the workspace beside the restored session: wait for the turn to end, or B stops it (SIGTERM, then SIGKILL) and restores"
	default:
		if x.Type == explain.TypeLifecycleError {
			d.remedy = "nothing was kept of the failed session (its lease was released)"
		} else {
			d.remedy = "the log file has the details"
		}
	}
	if d.headline == "" {
		if len(d.chain) > 0 {
			d.headline = d.chain[len(d.chain)-1]
		} else {
			d.headline = errText(err)
		}
	}
	return d
}

// journalPlace says where a journal is damaged, from the typed facts of a
// *storage.CorruptError or a *journal.RecordDecodeError (on their own or
// as a restore's cause); "" when the failure names no damage.
func journalPlace(f facts) string {
	switch {
	case f.has("seq"):
		return "record " + f.num("seq")
	case f.str("path") != "":
		where := clean(f.str("path"))
		if v, _ := f.x.Field("offset"); v != nil {
			if off, ok := v.(int64); ok && off >= 0 {
				where += " at byte " + strconv.FormatInt(off, 10)
			}
		}
		return where
	case f.has("name"):
		return clean(f.str("name"))
	}
	return ""
}

func driftTable(changes []event.Change) []string {
	rows := driftRows(changes)
	widths := make([]int, 4)
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], min(width(c), 24))
		}
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for j, c := range r {
			b.WriteString(fit(c, widths[j]))
			if j < len(r)-1 {
				b.WriteString("  ")
			}
		}
		out[i] = strings.TrimRight(b.String(), " ")
	}
	return out
}
