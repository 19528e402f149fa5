package tui

import (
	"io"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/config"
	"looprig/rig"
	"looprig/rig/event"
)

// Announcements: when a session that is not the one in front of the user
// opens a gate, its turn calls for the user (a bell or a notification its
// program wrote: rig.Attention), or it ends a turn that ran at least
// NotifyAfter, the TUI writes a bell or a desktop notification (OSC 9,
// OSC 777) to its terminal, once per gate, per call and per turn end (but
// the interruption a restore records for a turn a crash cut off). What a session showed when
// the TUI first saw it is not news: only what changes afterwards is
// announced. The text comes from sessions (titles, gate questions): only
// printable characters of it are kept, and looprig builds the escape
// sequence itself.

// heard is what the announcements last saw of a session.
type heard struct {
	primed    bool   // the session was seen once: changes from now on are news
	gate, end string // the gate and the turn end last seen
	attn      uint64 // the sequence of the turn's call last seen
}

// announce announces what changed in v since it was last looked at here
// (sessView.news), unless v is the session in front of the user (front).
func (a *attention) announce(h *shared, v, front *sessView) tea.Cmd {
	var cmds []tea.Cmd
	for _, what := range v.news(v == front, h.notifyAfter()) {
		cmds = append(cmds, h.notifyCmd(v.id, v.notifyTitle(), what))
	}
	return tea.Batch(cmds...)
}

// news says what changed in v since the announcements last looked (heard)
// and is to be announced: a gate that opened, a call of its turn for the
// user, a turn end (but a crash's, or of a turn shorter than after). Nothing is news in front of the user
// (front), nor what v showed when first seen; a partial fold (a replay or
// a journal read in progress) is not looked at.
func (v *sessView) news(front bool, after time.Duration) []string {
	if v.replaying() || v.journal.state == journalReading {
		return nil // a partial fold shows old gates and ends
	}
	now := v.activity()
	gate := now.gate.id
	var end string
	e := now.lastEnd
	if e != nil {
		end = e.TurnID
	}
	var attn uint64
	a := now.attention
	if a != nil {
		attn = a.Seq
	}
	if !v.heard.primed {
		v.heard = heard{primed: true, gate: gate, end: end, attn: attn}
		return nil
	}
	var out []string
	if gate != "" && gate != v.heard.gate {
		v.heard.gate = gate
		if !front {
			prompt := ""
			if now.gate.prompt != "" {
				prompt = ": " + now.gate.prompt
			}
			out = append(out, "waits at a gate"+prompt)
		}
	}
	if attn != 0 && attn != v.heard.attn {
		v.heard.attn = attn
		if !front {
			out = append(out, attentionText(*a))
		}
	}
	if end != "" && end != v.heard.end {
		v.heard.end = end
		// A crash's interruption is recorded by whoever restores the
		// session (R, r): not news to announce.
		crash := e.Outcome == rig.TurnOutcomeInterrupted && e.Reason == event.ReasonCrash
		if !front && !crash && e.Duration() >= after {
			out = append(out, endText(*e))
		}
	}
	return out
}

// attend follows what the sessions ask of the user after msg: a listing
// (listed: the list has had one) primes the seen state (first run) and
// forgets deleted sessions; what changed in the sessions msg concerns is
// announced; the session in front of the user (front) is seen.
func (a *attention) attend(h *shared, msg tea.Msg, sessions map[string]*sessView, front *sessView, listed bool) tea.Cmd {
	var cmds []tea.Cmd
	announceID := func(id string) {
		if v := sessions[id]; v != nil {
			cmds = append(cmds, a.announce(h, v, front))
		}
	}
	switch msg := msg.(type) {
	case listMsg:
		if msg.err == nil && !msg.same && listed {
			cmds = append(cmds, a.prime(sessions))
			a.seen.forget(func(id string) bool { return sessions[id] != nil })
			for _, v := range sessions {
				cmds = append(cmds, a.announce(h, v, front))
			}
		}
	case streamMsg:
		announceID(msg.id)
	case journalMsg:
		if msg.history {
			announceID(msg.id)
		}
	case attachedMsg:
		announceID(msg.id)
	}
	cmds = append(cmds, a.markSeen(h, front))
	return tea.Batch(cmds...)
}

// notifyTitle is what an announcement calls v: its title as the
// catalog has it, else its short id.
func (v *sessView) notifyTitle() string {
	if v.listing.rawTitle == "" {
		return v.short
	}
	return v.listing.rawTitle
}

// notifyAfter is how long a turn must have run for its end to be
// announced.
func (h *shared) notifyAfter() time.Duration {
	if d := h.opts.NotifyAfter; d > 0 {
		return d
	}
	return config.DefaultNotifyAfter
}

// notifiedMsg: an announcement was written (or failed to be).
type notifiedMsg struct{ err error }

// logged logs an announcement that could not be written.
func (msg notifiedMsg) logged(log *slog.Logger) tea.Cmd {
	if msg.err != nil {
		log.Warn("notification not written", "err", msg.err)
	}
	return nil
}

// notifyCmd writes the announcement that session id, titled title
// (unsanitized: notifySequence keeps its printable text), says what.
func (h *shared) notifyCmd(id, title, what string) tea.Cmd {
	w, mode := h.opts.NotifyTo, h.opts.Notify
	if w == nil || mode == "none" {
		return nil
	}
	seq := notifySequence(mode, h.opts.InTmux, "looprig: "+title, what)
	h.log.Info("notify", "session", id, "mode", mode, "what", notifyText(what, 200))
	return func() tea.Msg {
		_, err := io.WriteString(w, seq)
		return notifiedMsg{err: err}
	}
}

// notifySequence builds the announcement for mode ("" is the bell): the
// title and body are reduced to printable text (notifyText), so nothing
// a session printed can end the sequence early or start another. Inside
// tmux a desktop notification is wrapped for its passthrough (tmux needs
// allow-passthrough on); the bell is tmux's own (its bell flag and
// bell-action).
func notifySequence(mode string, inTmux bool, title, body string) string {
	var seq string
	switch mode {
	case "osc9":
		seq = "\x1b]9;" + notifyText(title+": "+body, 240) + "\x07"
	case "osc777":
		seq = "\x1b]777;notify;" + strings.ReplaceAll(notifyText(title, 80), ";", ",") + ";" +
			strings.ReplaceAll(notifyText(body, 200), ";", ",") + "\x07"
	default:
		return "\a"
	}
	if inTmux {
		seq = "\x1bPtmux;" + strings.ReplaceAll(seq, "\x1b", "\x1b\x1b") + "\x1b\\"
	}
	return seq
}

// notifyText keeps the printable characters of s (spaces for the rest),
// at most n of them.
func notifyText(s string, n int) string {
	var b strings.Builder
	count := 0
	for _, r := range s {
		if count == n {
			b.WriteString("…")
			break
		}
		switch {
		case r == utf8.RuneError:
			r = '?'
		case !unicode.IsPrint(r):
			r = ' '
		}
		b.WriteRune(r)
		count++
	}
	return b.String()
}
