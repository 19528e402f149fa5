package tui

import (
	"errors"
	"strconv"
	"strings"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// diagnosis is how the errors strip explains a failure: a badge (the
// RestoreError kind), a headline, the stage, the cause chain, an optional
// table (drift) and a one-line remedy. Every string is sanitized.
type diagnosis struct {
	kind     string
	headline string
	stage    string
	chain    []string
	table    []string
	remedy   string
}

var stageText = map[rig.RestoreErrorKind]string{
	rig.RestoreDiscoveryFailed:   "discovery — finding the journal and its SessionStarted",
	rig.RestoreLeaseFailed:       "lease — taking the session lease",
	rig.RestoreJournalFailed:     "journal — appending the opening fence",
	rig.RestoreReplayFailed:      "replay — reading the journal back",
	rig.RestoreAppendFailed:      "append — journaling the restore records",
	rig.RestoreLoopFailed:        "loop — rebuilding the root loop",
	rig.RestoreRuntimeFailed:     "runtime — building the engine",
	rig.RestoreMaterializeFailed: "materialize — placing the workspace",
	rig.RestoreContextDone:       "the restore ran out of time or was cancelled",
}

func diagnose(err error) diagnosis {
	d := diagnosis{kind: "ERROR", headline: "", chain: causeChain(err)}
	var (
		re       *rig.RestoreError
		rejected *rig.RestoreRejectedError
		mismatch *rig.ConfigMismatchError
		held     *storage.LeaseHeldError
		corrupt  *storage.CorruptError
		decode   *journal.RecordDecodeError
		busy     *rig.WorkspaceRootBusyError
		lc       *rig.LifecycleError
		unknown  *engine.UnknownEngineError
		badID    *rig.UnknownSessionError
	)
	switch {
	case errors.As(err, &rejected):
		d.kind = "config_rejected"
		src := rejected.Source
		if src == "" {
			src = "the decider"
		}
		d.headline = "configuration drift rejected by " + clean(src)
		d.stage = "configuration check — before anything of the restore was written"
		d.table = driftTable(rejected)
		d.chain = nil
		if rejected.Cause != nil {
			d.chain = []string{errText(rejected.Cause)}
		}
		d.remedy = "r reviews the changes and can accept them (restore under the current profile)"
		return d
	case errors.As(err, &mismatch):
		d.kind = "config_mismatch"
		d.headline = "configuration fingerprint changed (session recorded without a manifest)"
		d.stage = "configuration check — before anything of the restore was written"
		d.remedy = "restore it with the profile it was created with; fingerprint-only sessions cannot adopt drift"
		return d
	case errors.As(err, &re):
		d.kind = string(re.Kind)
		d.headline = clean(string(re.Kind))
		d.stage = stageText[re.Kind]
	case errors.As(err, &lc):
		d.kind = "create_failed"
		d.headline = "new session failed at stage " + clean(string(lc.Stage))
		d.stage = clean(string(lc.Stage))
	}
	if len(d.chain) > 1 && re != nil {
		d.chain = d.chain[1:] // the first layer only repeats the kind
	}
	switch {
	case errors.As(err, &busy): // before held: the root's LeaseHeldError is its cause
		who := "another session"
		if errors.As(err, &held) && (held.Holder.PID != 0 || held.Holder.Host != "") {
			who = "another session (" + clean(holderText(held.Holder)) + ")"
		}
		d.headline = "workspace root " + clean(busy.Root) + " is held by " + who + " at epoch " + strconv.FormatUint(busy.HolderEpoch, 10)
		if re != nil {
			d.stage = "lease — taking the workspace root's lease, before anything of the restore was written"
		}
		d.remedy = "another session works in " + clean(busy.Root) + ": shut it down first (X on it), then r"
	case errors.As(err, &held):
		who := "another process"
		if held.Holder.PID != 0 || held.Holder.Host != "" {
			who = clean(holderText(held.Holder))
		}
		d.headline = "the lease is held by " + who + " at epoch " + strconv.FormatUint(held.HolderEpoch, 10)
		d.remedy = "held by " + who + " (epoch " + strconv.FormatUint(held.HolderEpoch, 10) + "): B breaks the lease and takes the session over"
	case errors.As(err, &decode), errors.As(err, &corrupt):
		where := ""
		switch {
		case decode != nil:
			where = "record " + strconv.FormatUint(decode.Seq, 10)
		case corrupt != nil && corrupt.Path != "":
			where = clean(corrupt.Path)
			if corrupt.Offset >= 0 {
				where += " at byte " + strconv.Itoa(int(corrupt.Offset))
			}
		case corrupt != nil:
			where = clean(corrupt.Name)
		}
		d.headline = "the journal is corrupt at " + where
		d.remedy = "nothing was modified: no record was repaired, truncated or rewritten; inspect it with `looprig log` (the session stays broken)"
	case errors.As(err, &unknown):
		d.remedy = "engine " + strconv.Quote(clean(unknown.Name)) + " is unknown here (known: " + clean(strings.Join(unknown.Known, ", ")) + "): define it in config.toml"
	case errors.As(err, &badID):
		d.remedy = "the session is gone from the store"
	case re != nil:
		switch re.Kind {
		case rig.RestoreDiscoveryFailed:
			d.remedy = "there is nothing to restore (no journal or no SessionStarted); nothing was modified"
		case rig.RestoreLeaseFailed:
			d.remedy = "the lease could not be taken: r retries"
		case rig.RestoreJournalFailed:
			d.remedy = "another writer may have fenced the journal meanwhile: r retries"
		case rig.RestoreReplayFailed:
			d.remedy = "the journal could not be read back; nothing was modified: r retries, `looprig log` shows it"
		case rig.RestoreMaterializeFailed:
			d.remedy = "the workspace could not be placed: check the profile's root and the disk, then r"
		case rig.RestoreContextDone:
			d.remedy = "the restore timed out: r retries"
		default:
			d.remedy = "r retries; the log file has the details"
		}
	case lc != nil:
		d.remedy = "nothing was kept of the failed session (its lease was released)"
	default:
		d.remedy = "the log file has the details"
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

func driftTable(rj *rig.RestoreRejectedError) []string {
	rows := driftRows(rj)
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
