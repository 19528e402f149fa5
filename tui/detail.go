package tui

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
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
	var out []kv
	add := func(k, val string, p paint) { out = append(out, kv{k, val, p}) }
	add("id", v.id, st.text)
	sw := stateGlyph(state) + " " + stateWord(state)
	switch {
	case state == rig.StateLive && v.attached():
		sw += " · pid " + strconv.Itoa(v.hostPID()) + " (attached)"
	case state == rig.StateLive:
		sw += " · pid " + strconv.Itoa(v.hostPID())
	case v.listing.info.Reason != "":
		sw += " — " + clean(v.listing.info.Reason)
	}
	if v.busy != notBusy {
		sw += " · " + c.spin + " " + v.busy.String() + "…"
	}
	add("state", sw, st.state[state])
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
	add("lease", lease, st.text)
	title := v.listing.title
	if title == "" {
		title = "(untitled)"
	}
	add("title", title, st.text)
	prof := v.listing.info.Profile
	if prof == "" {
		prof = v.transcript.fold.Profile
	}
	eng := v.listing.info.Engine
	if eng == "" {
		eng = v.transcript.fold.Engine
	}
	add("profile", clean(prof)+" · engine "+clean(eng), st.text)
	switch cv := v.transcript.fold.Conversation; {
	case cv != nil:
		add("agent", clean(cv.Agent)+" conversation "+clean(cv.ID), st.text)
	case v.listing.info.Conversation != nil:
		lc := v.listing.info.Conversation
		add("agent", clean(lc.Agent)+" conversation "+clean(lc.ID), st.text)
	}
	place := v.transcript.fold.Placement
	root := v.transcript.fold.Root
	if v.attached() {
		place, root = v.live.status.Placement, v.live.status.Workspace
	} else if root == "" && place == string(rig.PlacementSession) && d.workspaces != "" {
		root = filepath.Join(d.workspaces, v.id)
	}
	if place != "" || root != "" {
		add("placement", clean(place)+" · "+clean(orDash(root)), st.text)
	}
	seq := max(v.transcript.lastSeq, v.listing.info.LastSeq)
	add("journal", commas(seq)+" records (last seq "+strconv.FormatUint(seq, 10)+")", st.text)
	if v.transcript.fold.LoopID != "" {
		add("loop", clean(v.transcript.fold.LoopName)+" "+rig.ShortID(clean(v.transcript.fold.LoopID))+" ("+clean(v.transcript.fold.Engine)+") · "+plural(max(v.transcript.fold.Turns, v.listing.info.Turns), "turn"), st.text)
	}
	if t := v.transcript.fold.Turn(); t != nil {
		run := ""
		if !t.Started.IsZero() {
			run = " for " + dur(c.now.Sub(t.Started))
		}
		add("turn", "#"+strconv.Itoa(t.Index)+" running"+run+": "+clean(firstLine(t.Input)), st.ev[clsTurn])
	} else if v.listing.info.OpenTurn != "" && !v.journal.state.loaded() && !v.attached() {
		add("turn", "#"+strconv.Itoa(v.listing.info.Turn)+" open (per the catalog)", st.ev[clsTurn])
	} else {
		add("turn", "none running", st.muted)
	}
	if g := v.transcript.fold.Gate(); g != nil {
		add("gate", "? "+clean(firstLine(g.Prompt))+" — a approve · d deny", st.ev[clsGate])
	} else {
		add("gate", "none open", st.muted)
	}
	if a := v.attention(); a != nil {
		add("asks", "! "+clean(firstLine(attentionText(*a)))+" · since "+agoText(c.now, a.Since), st.ev[clsGate])
	}
	if e := v.lastEnd(); e != nil {
		txt := "#" + strings.TrimPrefix(endText(*e), "turn ") + " · " + agoText(c.now, e.Ended)
		_, cls := endMark(*e)
		if unseen {
			txt += " · new since you last looked"
		}
		add("last turn", txt, st.ev[cls])
	}
	switch cp := v.transcript.fold.Checkpoint; {
	case cp != nil:
		add("workspace", checkpointText(cp.Files, cp.Bytes)+" · checkpointed "+agoText(c.now, cp.At)+" · c shows what a turn changed", st.text)
	case v.listing.info.Checkpoint != nil:
		lc := v.listing.info.Checkpoint
		add("workspace", checkpointText(lc.Files, lc.Bytes)+" · checkpointed "+agoText(c.now, lc.At), st.text)
	}
	if sk := v.transcript.fold.CheckpointSkipped; sk != nil {
		add("checkpoint", "! skipped: "+clean(firstLine(sk.Reason)), st.warn)
	}
	if o := v.live.outcome; o != nil {
		add("restored", "epoch "+strconv.FormatUint(o.Epoch, 10)+": "+plural(len(o.Interrupted), "turn")+" interrupted, "+
			plural(len(o.GatesClosed), "gate")+" closed, "+commas(o.Records)+" records", st.ev[clsRestore])
	} else if r := v.transcript.fold.LastRestore; r != nil {
		add("restored", "epoch "+strconv.FormatUint(r.Epoch, 10)+": "+plural(len(r.Interrupted), "turn")+" interrupted, "+
			plural(len(r.GatesClosed), "gate")+" closed", st.ev[clsRestore])
	}
	if !v.listing.info.Created.IsZero() {
		add("created", v.listing.info.Created.Local().Format("2006-01-02 15:04:05"), st.muted)
	}
	if why := v.notMutable(); why != "" && v.lost == nil {
		add("keys", why, st.muted)
	}
	return out
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
