package tui

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
	"looprig/rig/event"
)

// detailPane is the selected session's details, a line per key, scrolled
// by top (reset when the selection changes).
type detailPane struct {
	top int // first line shown
	// workspaces is where the sessions' own workspaces live (Options):
	// the placement line names a session's.
	workspaces string
}

// key scrolls by a movement key.
func (d *detailPane) key(k keyMap, msg tea.KeyMsg) {
	switch {
	case key.Matches(msg, k.Up):
		d.top--
	case key.Matches(msg, k.Down):
		d.top++
	case key.Matches(msg, k.Top):
		d.top = 0
	case key.Matches(msg, k.Bottom):
		d.top = 1 << 20
	}
	d.top = max(0, d.top)
}

// view draws session v (nil: none is selected), w×h with its frame;
// unseen says its last turn end is new since the user last looked.
func (d *detailPane) view(c common, v *sessView, unseen, focused bool, w, h int) []string {
	if h <= 0 {
		return nil
	}
	st := c.st
	iw := w - 2
	var content []string
	if v == nil {
		content = []string{st.muted.s(fit(" no session selected", iw))}
		return box(st, "Detail", "", focused, w, h, content)
	}
	lines := d.lines(c, v, unseen)
	rows := h - 2
	top := min(d.top, max(0, len(lines)-rows))
	lw := 11
	for i := top; i < len(lines) && len(content) < rows; i++ {
		kv := lines[i]
		if kv.k == "" {
			content = append(content, kv.p.s(fit(" "+kv.v, iw)))
			continue
		}
		content = append(content, st.muted.s(fit(" "+kv.k, lw))+kv.p.s(fit(kv.v, iw-lw)))
	}
	return box(st, "Detail", v.short, focused, w, h, content)
}

// kv is a line of the detail pane: a key, its value and the value's paint.
type kv struct {
	k, v string
	p    paint
}

// lines are the details of v.
func (d *detailPane) lines(c common, v *sessView, unseen bool) []kv {
	st := c.st
	state := v.state()
	var out kvs
	out.add("id", v.id, st.text)
	out.add("state", stateText(c, v, state), st.state[state])
	out.add("lease", leaseText(v, state), st.text)
	d.whatLines(c, v, &out)
	activityLines(c, v, unseen, &out)
	historyLines(c, v, &out)
	return out
}

// kvs are the lines of the detail pane, in order.
type kvs []kv

// add adds the line of key k: its value val, painted p.
func (o *kvs) add(k, val string, p paint) { *o = append(*o, kv{k, val, p}) }

// stateText is the state line of v: its state, the host serving it, why
// it is as it is, what the TUI is doing to it.
func stateText(c common, v *sessView, state rig.SessionState) string {
	sw := stateGlyph(state) + " " + stateWord(state)
	switch {
	case state == rig.StateLive && v.attached():
		sw += " · pid " + strconv.Itoa(v.hostPID()) + " (attached)"
	case state == rig.StateLive:
		sw += " · pid " + strconv.Itoa(v.hostPID())
	case v.listing.probe.stopped && v.listing.info.Holder != nil && !v.listing.info.NotAnswering:
		sw += " — " + rig.NotAnsweringReason(v.listing.info.Holder.PID)
	case v.listing.info.Reason != "":
		sw += " — " + clean(v.listing.info.Reason)
	}
	if v.busy != notBusy {
		sw += " · " + c.spin + " " + v.busy.String() + "…"
	}
	return sw
}

// leaseText is the lease line of v: its epoch, who holds it or held it last.
func leaseText(v *sessView, state rig.SessionState) string {
	lease := "epoch " + strconv.FormatUint(v.epoch(), 10)
	switch {
	case v.lost != nil:
		lease = "lost at epoch " + strconv.FormatUint(v.lost.oldEpoch, 10) + "; " + epochText(v.lost.newEpoch)
		if v.lost.newEpoch > 0 {
			lease = "lost at epoch " + strconv.FormatUint(v.lost.oldEpoch, 10) + "; epoch " + strconv.FormatUint(v.lost.newEpoch, 10)
		}
		if v.lost.holder != "" {
			lease += " held by " + v.lost.holder
		}
	case state == rig.StateLive:
		lease += " · held by its host, pid " + strconv.Itoa(v.hostPID())
	case v.listing.holder != "" && state == rig.StateHeld:
		lease += " · held by " + v.listing.holder
	case v.listing.holder != "":
		lease += " · last holder " + v.listing.holder
	default:
		lease += " · free"
	}
	return lease
}

// whatLines add what v is: its title, profile and engine, agent
// conversation, placement, journal and root loop.
func (d *detailPane) whatLines(c common, v *sessView, out *kvs) {
	st := c.st
	title := v.listing.title
	if title == "" {
		title = "(untitled)"
	}
	out.add("title", title, st.text)
	prof := v.listing.info.Profile
	if prof == "" {
		prof = v.transcript.fold.Profile
	}
	eng := v.listing.info.Engine
	if eng == "" {
		eng = v.transcript.fold.Engine
	}
	out.add("profile", clean(prof)+" · engine "+clean(eng), st.text)
	switch cv := v.transcript.fold.Conversation; {
	case cv != nil:
		out.add("agent", clean(cv.Agent)+" conversation "+clean(cv.ID), st.text)
	case v.listing.info.Conversation != nil:
		lc := v.listing.info.Conversation
		out.add("agent", clean(lc.Agent)+" conversation "+clean(lc.ID), st.text)
	}
	ff := v.transcript.fold.ForkedFrom
	if ff == nil {
		ff = v.listing.info.ForkedFrom
	}
	if ff != nil {
		out.add("forked", "from "+rig.ShortID(clean(ff.Session))+" at turn "+strconv.Itoa(ff.TurnIndex), st.text)
	}
	place := v.transcript.fold.Placement
	root := v.transcript.fold.Root
	if place == "" { // its journal not read yet: its catalog entry's
		place, root = string(v.listing.info.Placement), v.listing.info.Root
	}
	if v.attached() {
		place, root = v.live.status.Placement, v.live.status.Workspace
	} else if root == "" && place == string(rig.PlacementSession) && d.workspaces != "" {
		root = filepath.Join(d.workspaces, v.id)
	}
	if place != "" || root != "" {
		out.add("placement", clean(place)+" · "+clean(orDash(root)), st.text)
	}
	switch w := v.transcript.fold.Worktree; {
	case w != nil:
		out.add("branch", clean(w.Branch)+" · git worktree of "+clean(w.Repo), st.text)
	case v.listing.info.Worktree != nil:
		lw := v.listing.info.Worktree
		out.add("branch", clean(lw.Branch)+" · git worktree of "+clean(lw.Repo), st.text)
	}
	seq := max(v.transcript.lastSeq, v.listing.info.LastSeq)
	out.add("journal", commas(seq)+" records (last seq "+strconv.FormatUint(seq, 10)+")", st.text)
	if v.transcript.fold.LoopID != "" {
		out.add("loop", clean(v.transcript.fold.LoopName)+" "+rig.ShortID(clean(v.transcript.fold.LoopID))+" ("+clean(v.transcript.fold.Engine)+") · "+plural(max(v.transcript.fold.Turns, v.listing.info.Turns), "turn"), st.text)
	}
}

// activityLines add what v is doing (sessView.activity): its running
// turn, the checkpoint it takes, its open gate, what its turn asks, how
// its last turn ended.
func activityLines(c common, v *sessView, unseen bool, out *kvs) {
	st := c.st
	a := v.activity()
	switch t := a.turn; {
	case a.running():
		run := ""
		if !t.since.IsZero() {
			run = " for " + dur(c.now.Sub(t.since))
		}
		what := ": " + clean(firstLine(t.input))
		if !a.fromFold && t.input == "" {
			what = " (per the catalog)"
		}
		out.add("turn", "#"+strconv.Itoa(t.index)+" running"+run+what, st.ev[clsTurn])
	case t.id != "" && a.state == rig.StateCrashed:
		what := ""
		if t.input != "" {
			what = ": " + clean(firstLine(t.input))
		}
		out.add("turn", "#"+strconv.Itoa(t.index)+" did not end, its holder died"+what, st.warn)
	default:
		out.add("turn", "none running", st.muted)
	}
	if a.checkpointing {
		txt := "⟳ finishing the last turn"
		if p := a.progress; p != nil {
			txt = "⟳ checkpointing " + p.For()
			if d := p.Done(); d != "" {
				txt += ": " + d
			}
			if p.Trigger == event.TriggerTurn {
				txt += " · the next turn waits for it"
			}
		}
		out.add("checkpoint", txt, st.ev[clsTurn])
	}
	if g := a.gate; g.id != "" {
		q := clean(firstLine(g.prompt))
		if q == "" {
			q = "one is open"
		}
		out.add("gate", "? "+q+" — a approve · d deny", st.ev[clsGate])
	} else {
		out.add("gate", "none open", st.muted)
	}
	if at := a.attention; at != nil {
		out.add("asks", "! "+clean(firstLine(attentionText(*at)))+" · since "+agoText(c.now, at.Since), st.ev[clsGate])
	}
	if e := a.lastEnd; e != nil {
		txt := "#" + strings.TrimPrefix(endText(*e), "turn ") + " · " + agoText(c.now, e.Ended)
		_, cls := endMark(*e)
		if unseen {
			txt += " · new since you last looked"
		}
		out.add("last turn", txt, st.ev[cls])
	}
}

// historyLines add what v went through: its workspace's last checkpoint
// (or skip), its last restore, its creation, and why keys do nothing.
func historyLines(c common, v *sessView, out *kvs) {
	st := c.st
	switch cp := v.transcript.fold.Checkpoint; {
	case cp != nil:
		out.add("workspace", checkpointText(cp.Files, cp.Bytes)+" · checkpointed "+agoText(c.now, cp.At)+" · c shows what a turn changed", st.text)
	case v.listing.info.Checkpoint != nil:
		lc := v.listing.info.Checkpoint
		out.add("workspace", checkpointText(lc.Files, lc.Bytes)+" · checkpointed "+agoText(c.now, lc.At), st.text)
	}
	if sk := v.transcript.fold.CheckpointSkipped; sk != nil {
		out.add("checkpoint", "! skipped: "+clean(firstLine(sk.Reason)), st.warn)
	}
	if o := v.live.outcome; o != nil {
		out.add("restored", "epoch "+strconv.FormatUint(o.Epoch, 10)+": "+plural(len(o.Interrupted), "turn")+" interrupted, "+
			plural(len(o.GatesClosed), "gate")+" closed, "+commas(o.Records)+" records", st.ev[clsRestore])
	} else if r := v.transcript.fold.LastRestore; r != nil {
		out.add("restored", "epoch "+strconv.FormatUint(r.Epoch, 10)+": "+plural(len(r.Interrupted), "turn")+" interrupted, "+
			plural(len(r.GatesClosed), "gate")+" closed", st.ev[clsRestore])
	}
	if !v.listing.info.Created.IsZero() {
		out.add("created", v.listing.info.Created.Local().Format("2006-01-02 15:04:05"), st.muted)
	}
	if why := v.notMutable(); why != "" && v.lost == nil {
		out.add("keys", why, st.muted)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// checkpointText is a checkpoint's size for the detail pane.
func checkpointText(files int, bytes int64) string {
	return plural(files, "file") + ", " + commas(uint64(max(bytes, 0))) + " bytes"
}
