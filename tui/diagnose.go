package tui

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/fault"
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
var stageText = map[fault.Kind]string{
	fault.KindDiscoveryFailed:   "discovery — finding the journal and its SessionStarted",
	fault.KindLeaseFailed:       "lease — taking the session lease",
	fault.KindJournalFailed:     "journal — appending the opening fence",
	fault.KindTurnRunning:       "turn check — looking for a turn of an earlier holder still running here",
	fault.KindReplayFailed:      "replay — reading the journal back",
	fault.KindAppendFailed:      "append — journaling the restore records",
	fault.KindLoopFailed:        "loop — rebuilding the root loop",
	fault.KindRuntimeFailed:     "runtime — building the engine",
	fault.KindMaterializeFailed: "materialize — placing the workspace",
	fault.KindContextDone:       "the restore ran out of time or was cancelled",
}

// madeWhere is the --placement/--root of a restore where the session was
// made, when its drift cs moves the workspace (rig.PlacementBefore); ""
// when it does not. The words are sanitized.
func madeWhere(cs []event.Change) string {
	placement, root, moved := rig.PlacementBefore(cs)
	if !moved {
		return ""
	}
	var b strings.Builder
	if placement != "" {
		b.WriteString(" --placement " + clean(string(placement)))
	}
	if root != "" && placement != rig.PlacementSession {
		b.WriteString(" --root " + clean(shellWord(root)))
	}
	return b.String()
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// failure is what diagnose reads of an error: explain's classification
// of it and its typed facts (and the error itself, for its cause chain).
type failure struct {
	err error
	x   fault.Explanation
	f   explain.Facts
}

// restore reports whether the failure is a failed restore's.
func (c failure) restore() bool { return c.x.Type == fault.TypeRestoreError }

// diagnose words err for the errors strip: the family of the failure (its
// fault.Type) lays out the headline and stage, and its remedy the last
// line; each is one row of a table below. The TUI only words what explain
// classified: it decides nothing about what a failure is.
func diagnose(err error) diagnosis {
	c := failure{err: err, x: explain.Explain(err)}
	c.f = explain.FactsOf(c.x)
	d := diagnosis{kind: "ERROR", chain: causeChain(err)}
	if c.x.Classified() {
		d.kind = c.x.Kind.String()
	}
	// A host that ended before it served the session is the one failure
	// explain does not classify (host.HostExitedError carries no
	// explanation yet): worded from its own pid and exit status.
	var exited *host.HostExitedError
	if errors.As(err, &exited) {
		d.kind = "host_exited"
		d.headline = "the host process (pid " + strconv.Itoa(exited.PID) + ") ended before it served the session: " + clean(exited.Status)
		d.chain = nil
		d.remedy = "its log, <session id>.log in the store's socket directory, says why; the TUI's log has the command"
		return d
	}
	if family := families[c.x.Type]; family != nil && family(&d, c) {
		return d
	}
	if remedy := remedies[c.x.Remedy]; remedy != nil {
		remedy(&d, c)
	} else if c.x.Type == fault.TypeLifecycleError {
		d.remedy = "nothing was kept of the failed session (its lease was released)"
	} else {
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

// families lay out the failures of one type: the headline, the stage and
// the chain. One that returns true has said everything, its remedy too.
var families = map[fault.Type]func(d *diagnosis, c failure) bool{
	fault.TypeProtocolMismatchError: func(d *diagnosis, c failure) bool {
		d.headline = "its host (pid " + num(c.f.PID) + ") speaks protocol " + num(c.f.ServerProtocol) +
			", this looprig speaks " + num(c.f.ClientProtocol)
		d.chain = nil
		d.remedy = "the session goes on in the old host"
		var mismatch *host.ProtocolMismatchError // its hint is the host's own words, not a fact
		if errors.As(c.err, &mismatch) {
			d.remedy += ": " + clean(mismatch.Hint)
		}
		return true
	},
	fault.TypeRestoreRejectedError: func(d *diagnosis, c failure) bool {
		src := c.f.Source
		if src == "" {
			src = "the decider"
		}
		d.headline = "configuration drift rejected by " + clean(src)
		d.stage = "configuration check — before anything of the restore was written"
		d.table = driftTable(c.f.Changes)
		d.chain = nil
		if c.f.Cause != "" {
			d.chain = []string{clean(c.f.Cause)}
		}
		d.remedy = "r reviews the changes and can accept them (restore under the current profile)"
		if made := madeWhere(c.f.Changes); made != "" {
			// Accepting moves the workspace; the CLI restores it where it was.
			d.remedy = "r reviews the changes and can accept them: the workspace then moves, and the files where it worked stay there; " +
				"to restore it where it was made: looprig restore " + rig.ShortID(c.f.Session) + made
		}
		return true
	},
	fault.TypeConfigMismatchError: func(d *diagnosis, _ failure) bool {
		d.headline = "configuration fingerprint changed (session recorded without a manifest)"
		d.stage = "configuration check — before anything of the restore was written"
		d.remedy = "restore it with the profile it was created with; fingerprint-only sessions cannot adopt drift"
		return true
	},
	fault.TypeProfileGoneError: func(d *diagnosis, c failure) bool {
		profile := strconv.Quote(clean(c.f.Profile))
		d.headline = "the profile it was created with, " + profile + ", is not configured any more"
		d.stage = "profile — finding the one it recorded, before anything was written"
		d.chain = nil // the headline says it all
		d.remedy = "nothing was changed: define " + profile + " in config.toml again (known: " +
			clean(strings.Join(c.f.Known, ", ")) + "), or restore it with another profile: looprig restore " +
			rig.ShortID(c.f.Session) + " --rig NAME"
		return true
	},
	fault.TypeRestoreError: func(d *diagnosis, c failure) bool {
		d.headline = c.x.Kind.String()
		d.stage = stageText[c.x.Kind]
		if len(d.chain) > 1 {
			d.chain = d.chain[1:] // the first layer only repeats the kind
		}
		return false
	},
	fault.TypeLifecycleError: func(d *diagnosis, c failure) bool {
		d.kind = "create_failed"
		d.headline = "new session failed at stage " + c.x.Kind.String()
		d.stage = c.x.Kind.String()
		return false
	},
}

// remedies word what to do about a failure (and, for some, its
// headline). A remedy not here gets the default line (see diagnose).
var remedies = map[fault.Remedy]func(d *diagnosis, c failure){
	fault.RemedyShutDownRootHolder: func(d *diagnosis, c failure) {
		who := "another session"
		if h := c.f.Holder; h.PID != 0 || h.Host != "" {
			who = "another session (" + clean(holderText(h)) + ")"
		}
		root := "a workspace root"
		if r := c.f.Root; r != "" {
			root = "workspace root " + clean(r)
		}
		d.headline = root + " is held by " + who + " at epoch " + unum(c.f.HolderEpoch)
		if c.restore() {
			d.stage = "lease — taking the workspace root's lease, before anything of the restore was written"
		}
		where := "that workspace root"
		if r := c.f.Root; r != "" {
			where = clean(r)
		}
		d.remedy = "another session works in " + where + ": shut it down first (X on it), then r"
		switch {
		case !c.restore() && inGitTree(c.f.Root):
			d.remedy = "another session works in " + where + ": n again with the worktree option (a git worktree of its own, on a new branch), or shut it down first (X on it)"
		case !c.restore():
			d.remedy = "another session works in " + where + ": shut it down first (X on it), or n again with another directory (empty: a scratch directory)"
		}
	},
	fault.RemedyWaitOrBreakLease: func(d *diagnosis, c failure) {
		who := "another process"
		if h := c.f.Holder; h.PID != 0 || h.Host != "" {
			who = clean(holderText(h))
		}
		epoch := unum(c.f.HolderEpoch)
		d.headline = "the lease is held by " + who + " at epoch " + epoch
		d.remedy = "held by " + who + " (epoch " + epoch + "): B breaks the lease and takes the session over"
	},
	fault.RemedyInspectJournal: func(d *diagnosis, c failure) {
		if where := journalPlace(c.f); where != "" {
			d.headline = "the journal is corrupt at " + where
			d.remedy = "nothing was modified: no record was repaired, truncated or rewritten; inspect it with `looprig log` (the session stays broken)"
		} else {
			d.remedy = "the journal could not be read back; nothing was modified: r retries, `looprig log` shows it"
		}
	},
	fault.RemedyRepairEpochFile: func(d *diagnosis, c failure) {
		d.headline = "the lease epoch file " + clean(c.f.Path) + " is unreadable"
		d.remedy = "looprig never resets a lease epoch on its own: find the highest fence epoch with `looprig log`, then write {\"epoch\":N} above it into that file (see SECURITY.md)"
	},
	fault.RemedyDefineEngine: func(d *diagnosis, c failure) {
		d.remedy = "engine " + strconv.Quote(clean(c.f.Engine)) + " is unknown here (known: " + clean(strings.Join(c.f.Known, ", ")) + "): define it in config.toml"
	},
	fault.RemedyListSessions: func(d *diagnosis, c failure) {
		if c.x.Type == fault.TypeUnknownSessionError || c.f.Input != nil {
			d.remedy = "the session is gone from the store"
		} else {
			d.remedy = "there is nothing to restore (no journal or no SessionStarted); nothing was modified"
		}
	},
	fault.RemedyRetry: func(d *diagnosis, c failure) {
		d.remedy = retryText[c.x.Kind]
		if d.remedy == "" {
			d.remedy = "r retries; the log file has the details"
		}
	},
	fault.RemedyAnswerAsAPerson: func(d *diagnosis, c failure) {
		d.headline = "refused: the answer came from inside the session's own turn (pid " + num(c.f.PID) + ")"
		d.remedy = "a gate is answered, and input typed, by a person: a or d here, or looprig gate in your own terminal; the attempt is in the journal"
	},
	fault.RemedyStopEarlierTurn: func(d *diagnosis, c failure) {
		d.headline = "turn " + num(c.f.Index) + " of its holder at epoch " + unum(c.f.Epoch) + " still runs here as process group " + num(c.f.PGID)
		d.remedy = "its processes would work in the workspace beside the restored session: wait for the turn to end, or B stops it (SIGTERM, then SIGKILL) and restores"
	},
	fault.RemedyLongerPrefix:       say("the id matches several sessions: give more of it"),
	fault.RemedyCheckWorkspace:     say("the workspace could not be placed: check the profile's root and the disk, then r"),
	fault.RemedyResolveDivergence:  say("its workspace has changes no checkpoint has: r asks whether to keep the directory or take the checkpoint (the directory is moved aside, never deleted)"),
	fault.RemedyFixProfile:         say("the profile cannot run: fix it in config.toml"),
	fault.RemedyFixSeed:            say("the seed directory is refused: fix it, or create the session without a seed"),
	fault.RemedyMoveStoreOrRoot:    say("a workspace root and the store overlap: move one so that neither contains the other"),
	fault.RemedyChooseProjectRoot:  say("the workspace root is \"/\" or your home directory itself: n again with a project directory (empty: a scratch directory), or set the profile's root to one"),
	fault.RemedySeeHolder:          say("another process took the lease: the list shows who holds it now"),
	fault.RemedyRestoreIt:          say("the turn's engine ignored the interrupt; the session is listed as crashed: r restores it"),
	fault.RemedyRestoreWhenStopped: say("the session is shutting down: r restores it once it has stopped"),
	fault.RemedyTakeWithoutWorkspace: say("its holder does not checkpoint the workspace, whose files would not come with it: " +
		"set checkpoint = \"stop\" in its profile, or take it with `looprig take ID --without-workspace`"),
}

// retryText words a retry by the stage that failed.
var retryText = map[fault.Kind]string{
	fault.KindLeaseFailed:   "the lease could not be taken: r retries",
	fault.KindJournalFailed: "another writer may have fenced the journal meanwhile: r retries",
	fault.KindContextDone:   "the restore timed out: r retries",
}

// say is a remedy of fixed words.
func say(remedy string) func(d *diagnosis, c failure) {
	return func(d *diagnosis, _ failure) { d.remedy = remedy }
}

func num(n int64) string   { return strconv.FormatInt(n, 10) }
func unum(n uint64) string { return strconv.FormatUint(n, 10) }

// journalPlace says where a journal is damaged, from the typed facts of a
// *storage.CorruptError or a *journal.RecordDecodeError (on their own or
// as a restore's cause); "" when the failure names no damage.
func journalPlace(f explain.Facts) string {
	switch {
	case f.Seq != nil:
		return "record " + unum(*f.Seq)
	case f.Path != "":
		where := clean(f.Path)
		if f.Offset >= 0 {
			where += " at byte " + num(f.Offset)
		}
		return where
	}
	return clean(f.Name)
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

// inGitTree says whether dir is inside a git work tree: it or a parent
// has a .git (a directory, or a linked worktree's file). The create
// dialog's worktree option needs one (looprig new --worktree asks git).
func inGitTree(dir string) bool {
	if !filepath.IsAbs(dir) {
		return false
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return true
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}
