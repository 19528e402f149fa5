package rig

import (
	"bytes"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"looprig/rig/event"
)

// Attention from the turn itself: coding agents and many command-line
// programs ring the terminal's bell or send a desktop notification (OSC 9,
// OSC 777) when they wait for an answer or finish. The runtime reads every
// turn's output through an attentionDetector as it arrives (turnSink.Output)
// and journals one event.Attention per episode; the output's bytes are kept
// as they are. State folds it into Attention, which the user looking at the
// session (event.AttentionSeen, Session.SeeAttention) or the end of its
// turn clears.

// AttentionQuiet is the quiet that ends an episode: signals of one turn
// less than this apart (a program ringing ten bells, or one every few
// seconds while it waits) are one episode, journaled once, at its first
// signal. A signal after a longer quiet starts a new one, even while the
// last is still pending (its reason and text are the news). The user
// looking does not end an episode: a program that keeps ringing while
// they look does not mark the session again at once.
// WithAttentionQuiet changes it.
const AttentionQuiet = 5 * time.Second

// maxOSC bounds the operating system command a detector keeps while it
// reads one: a longer one (a clipboard write, an image) is dropped, not
// buffered.
const maxOSC = 4 << 10

// attentionSignal is one signal read from a turn's output.
type attentionSignal struct {
	reason string // event.AttentionBell, AttentionOSC9, AttentionOSC777, AttentionAgent
	text   string // printable, at most event.MaxAttentionText bytes
	agent  string // the agent engine, for AttentionAgent
}

// scanState is where an attentionDetector is in the output's escape
// sequences.
type scanState uint8

const (
	scanGround scanState = iota // text
	scanEsc                     // after ESC
	scanOSC                     // in an OSC string (ESC ])
	scanOSCEsc                  // in an OSC string, after ESC
	scanStr                     // in a DCS, SOS, PM or APC string: ignored
	scanStrEsc                  // in such a string, after ESC
)

const (
	ctlBEL = 0x07
	ctlESC = 0x1b
	ctlCAN = 0x18
	ctlSUB = 0x1a
)

// attentionDetector finds the signals in a turn's output, read chunk by
// chunk as it arrives: a sequence split across chunks is read whole. It
// is a small state machine after a terminal's parser: a BEL in text (or
// right after an ESC) is a bell; a BEL or ST (ESC \) ending an OSC, DCS,
// SOS, PM or APC string is not. An OSC 9 (but a ConEmu sub-command, such
// as 9;4 progress or 9;9 working directory) or an OSC 777 notify is a
// notification; every other OSC is ignored, and one longer than maxOSC
// is dropped. Its memory is bounded by maxOSC. For one goroutine at a
// time.
type attentionDetector struct {
	state scanState
	osc   []byte // the OSC string being read, at most maxOSC bytes
	over  bool   // the OSC string is longer than maxOSC: dropped at its end
}

// scan reads the next chunk of output and returns the signal it holds,
// if any: the first one, or the first notification with text after a
// bell (one chunk is one moment, and words say more than a bell).
func (d *attentionDetector) scan(p string) (sig attentionSignal, found bool) {
	d.each(p, func(s attentionSignal) {
		if !found || sig.reason == event.AttentionBell && s.text != "" {
			sig, found = s, true
		}
	})
	return sig, found
}

// each reads the next chunk of output and calls note for every signal in
// it, in order.
func (d *attentionDetector) each(p string, note func(attentionSignal)) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch d.state {
		case scanGround:
			j := i
			for j < len(p) && p[j] != ctlBEL && p[j] != ctlESC {
				j++
			}
			if j == len(p) {
				return
			}
			i = j
			if p[i] == ctlBEL {
				note(attentionSignal{reason: event.AttentionBell})
			} else {
				d.state = scanEsc
			}
		case scanEsc:
			d.escape(c, note)
		case scanOSC:
			switch c {
			case ctlBEL:
				d.endOSC(note)
			case ctlESC:
				d.state = scanOSCEsc
			case ctlCAN, ctlSUB:
				d.state = scanGround
			default:
				if c < 0x20 {
					break // ignored inside a string, as a terminal does
				}
				if len(d.osc) < maxOSC {
					d.osc = append(d.osc, c)
				} else {
					d.over = true
				}
			}
		case scanOSCEsc:
			if c == '\\' {
				d.endOSC(note)
				break
			}
			// An ESC that does not end the string cancels it and starts
			// a sequence of its own.
			d.state = scanEsc
			d.escape(c, note)
		case scanStr:
			switch c {
			case ctlBEL, ctlCAN, ctlSUB:
				d.state = scanGround
			case ctlESC:
				d.state = scanStrEsc
			}
		case scanStrEsc:
			if c == '\\' {
				d.state = scanGround
				break
			}
			d.state = scanEsc
			d.escape(c, note)
		}
	}
}

// escape reads byte c after an ESC.
func (d *attentionDetector) escape(c byte, note func(attentionSignal)) {
	switch c {
	case ']':
		d.state, d.osc, d.over = scanOSC, d.osc[:0], false
	case 'P', 'X', '^', '_':
		d.state = scanStr
	case ctlESC:
		// another ESC: still after one
	case ctlBEL:
		note(attentionSignal{reason: event.AttentionBell})
		d.state = scanGround
	default:
		if c < 0x20 && c != ctlCAN && c != ctlSUB {
			break // a control inside an escape sequence is carried out; the sequence goes on
		}
		d.state = scanGround
	}
}

// endOSC reads the OSC string that just ended.
func (d *attentionDetector) endOSC(note func(attentionSignal)) {
	d.state = scanGround
	if d.over {
		d.over = false
		return
	}
	if s, ok := oscSignal(d.osc); ok {
		note(s)
	}
	if cap(d.osc) > 256 {
		d.osc = nil // a long string's room is not kept for the turn's life
	}
}

// oscSignal reads an OSC string's payload (between ESC ] and its end):
// a notification, or none.
func oscSignal(b []byte) (attentionSignal, bool) {
	num, rest, ok := bytes.Cut(b, []byte{';'})
	if !ok {
		return attentionSignal{}, false
	}
	switch string(num) {
	case "9":
		if conEmuCommand(rest) {
			return attentionSignal{}, false
		}
		return attentionSignal{reason: event.AttentionOSC9, text: attentionText(string(rest))}, true
	case "777":
		kind, rest, _ := bytes.Cut(rest, []byte{';'})
		if string(kind) != "notify" {
			return attentionSignal{}, false // precmd, preexec, …
		}
		title, body, _ := bytes.Cut(rest, []byte{';'})
		text := string(body)
		switch {
		case len(title) > 0 && len(body) > 0:
			text = string(title) + ": " + string(body)
		case len(body) == 0:
			text = string(title)
		}
		return attentionSignal{reason: event.AttentionOSC777, text: attentionText(text)}, true
	}
	return attentionSignal{}, false
}

// conEmuCommand says whether the text of an OSC 9 is one of ConEmu's
// sub-commands (a number, alone or followed by ";": 9;4 progress, 9;9 the
// working directory, …), which are not notifications.
func conEmuCommand(b []byte) bool {
	n := 0
	for n < len(b) && '0' <= b[n] && b[n] <= '9' {
		n++
	}
	return n > 0 && (n == len(b) || b[n] == ';')
}

// attentionText makes a notification's text fit for the journal: valid
// UTF-8 (U+FFFD for what is not), printable characters only (a space for
// every other one, controls and bidi overrides included), trimmed, at most
// event.MaxAttentionText bytes. Presenters still sanitize it when they
// draw it (a journal is not trusted).
func attentionText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r != utf8.RuneError && !unicode.IsPrint(r) {
			r = ' '
		}
		if b.Len()+utf8.RuneLen(r) > event.MaxAttentionText {
			break
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}

// episodes tells the signals that start an episode from the ones that
// continue one: those less than quiet (AttentionQuiet) after the previous
// one. For one goroutine at a time.
type episodes struct {
	quiet time.Duration
	last  time.Time
}

// starts notes a signal at now and says whether it starts an episode.
func (e *episodes) starts(now time.Time) bool {
	quiet := e.last.IsZero() || now.Sub(e.last) >= e.quiet
	e.last = now
	return quiet
}

// Attention is what a session's turn asked of the user and nobody has
// looked at yet (State.Attention): the latest episode's reason and text,
// since the first episode not seen.
type Attention struct {
	TurnID string `json:"turn_id"`
	// Reason is event.AttentionBell, AttentionOSC9, AttentionOSC777 or
	// AttentionAgent.
	Reason string `json:"reason"`
	// Text is the notification's text ("" for a bell), printable and at
	// most event.MaxAttentionText bytes as journaled; sanitize it before
	// drawing it. For AttentionAgent it is the agent's words: show it as
	// theirs (Agent says: …).
	Text string `json:"text,omitempty"`
	// Agent names the agent engine of an AttentionAgent.
	Agent string `json:"agent,omitempty"`
	// Since is when the first episode not seen was recorded; At when the
	// latest was, whose journal sequence is Seq.
	Since time.Time `json:"since"`
	At    time.Time `json:"at"`
	Seq   uint64    `json:"seq"`
}
