package rig

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"looprig/rig/event"
	"looprig/rig/procgroup"
)

// Only a person answers a gate. A turn's commands run as the user and
// inherit LOOPRIG_SESSION, so without a check any of them could answer
// the gate that guards the next one (`looprig gate $LOOPRIG_SESSION
// approve`) or type into the turn's terminal. RespondGate and SendInput
// therefore refuse a client whose process runs inside the session's own
// turns (*FromTurnError), recognised by the rule by which a lease break
// recognises a turn's processes (procgroup.Inside: the process or an
// ancestor carries the session's environment, or is in the running turn's
// process group while the group carries it), and journal the attempt
// (event.Refused); an answer that is taken names its client in the
// journal (GateResolved.By).

// Client is who sends a session a request that speaks for the user: the
// kind of client it says it is, and its process as the system tells it.
// A host makes one per connection with PeerClient (the peer's pid from
// the socket, SO_PEERCRED or LOCAL_PEERPID); a caller in the session's
// own process uses PeerClient with its own pid. A Client with PID 0 (a
// system that does not tell a socket's peer, a test) is not checked and
// is journaled with pid 0.
type Client struct {
	// Kind is what the client says it is ("tui", "cli"); "" is journaled
	// as "unknown".
	Kind string
	// PID is its process; Terminal reports that the process had a
	// controlling terminal when PeerClient looked.
	PID      int
	Terminal bool
	start    uint64 // when the process started: a pid given again since is another process
}

// PeerClient describes process pid as a client of kind: its pid, whether
// it has a controlling terminal, and when it started, as the system says
// now, so that a later request on its connection can tell whether the
// process that connected is still there. A process that cannot be looked
// at keeps its pid (it is refused as gone when it asks to speak for the
// user).
func PeerClient(kind string, pid int) Client {
	c := Client{Kind: kind, PID: max(pid, 0)}
	if p, err := procgroup.Look(c.PID); err == nil {
		c.Terminal, c.start = p.Terminal, p.Start
	}
	return c
}

// ThisProcess is PeerClient of the calling process.
func ThisProcess(kind string) Client { return PeerClient(kind, os.Getpid()) }

// record is c as the journal keeps it.
func (c Client) record() *event.Client {
	return &event.Client{Kind: clientKind(c.Kind), PID: c.PID, Terminal: c.Terminal}
}

// clientKind is kind as the journal keeps it: printable ASCII without
// spaces (others become '?'), at most event.MaxClientKind bytes, "unknown"
// for none.
func clientKind(kind string) string {
	return printableWord(kind, event.MaxClientKind, "unknown")
}

// printableWord is s with every byte that is not printable ASCII, and
// every space, replaced by '?', cut to n bytes; none when s is "".
func printableWord(s string, n int, none string) string {
	if s == "" {
		return none
	}
	if len(s) > n {
		s = s[:n]
	}
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r >= 0x7f {
			return '?'
		}
		return r
	}, s)
}

// Requests a FromTurnError refuses.
const (
	RequestRespondGate = "respond_gate"
	RequestInput       = "input"
)

// FromTurnError refuses a gate's answer or input sent by a process inside
// one of the session's own turns, or by one that cannot be told apart
// from such a process (it is gone, another process may hold its
// connection; it cannot be inspected): only a person answers a gate and
// types into a turn. The attempt is journaled (event.Refused); the gate
// stays open.
type FromTurnError struct {
	Session string
	TurnID  string
	// Request is RequestRespondGate or RequestInput; GateID the gate.
	Request string
	GateID  string
	// Client is the client refused.
	Client event.Client
	// Reason is event.FromTurnCarries, FromTurnGroup, FromTurnGone or
	// FromTurnUnknown; Via the process found inside the turn (the
	// client's or an ancestor's; 0 for gone and unknown).
	Reason string
	Via    int
}

func (e *FromTurnError) Error() string {
	what := "answer to gate " + ShortID(e.GateID)
	if e.Request == RequestInput {
		what = "input"
	}
	who := fmt.Sprintf("%s pid %d", e.Client.Kind, e.Client.PID)
	const person = "only a person answers a gate or types into a turn, from outside the session's turns"
	switch e.Reason {
	case event.FromTurnGone:
		return fmt.Sprintf("%s refused: the process that connected (%s) is gone, or is another one now; %s", what, who, person)
	case event.FromTurnUnknown:
		return fmt.Sprintf("%s refused: whether %s runs inside a turn of session %s cannot be told; %s", what, who, ShortID(e.Session), person)
	}
	how := "carries its LOOPRIG_SESSION"
	if e.Reason == event.FromTurnGroup {
		how = "is in its running turn's process group"
	}
	via := "it"
	if e.Via != e.Client.PID {
		via = fmt.Sprintf("its ancestor pid %d", e.Via)
	}
	return fmt.Sprintf("%s refused: %s runs inside a turn of session %s (%s %s); %s",
		what, who, ShortID(e.Session), via, how, person)
}

// sessionMark is the entry of the environment every turn of session
// carries (see turnEnv): a process that carries it was started by one of
// its turns.
func sessionMark(session string) string { return "LOOPRIG_SESSION=" + session }

// fromTurn says whether client c's process runs inside one of the
// session's turns: "" when it does not (or c's process is not known, or
// this system cannot tell), else why (an event.FromTurn* reason) and the
// process found inside.
func (s *Session) fromTurn(c Client) (reason string, via int) {
	if c.PID <= 0 {
		return "", 0
	}
	p, err := procgroup.Look(c.PID)
	switch {
	case errors.Is(err, procgroup.ErrUnsupported):
		return "", 0
	case errors.Is(err, procgroup.ErrNoProcess), err == nil && c.start != p.Start:
		return event.FromTurnGone, 0
	case err != nil:
		return event.FromTurnUnknown, 0
	}
	pgid := 0
	s.mu.Lock()
	if t := s.turn; t != nil {
		pgid = int(t.pgid.Load())
	}
	s.mu.Unlock()
	where, via, err := procgroup.Inside(c.PID, procgroup.Group{PGID: pgid, Marks: []string{sessionMark(s.id.String())}})
	switch {
	case errors.Is(err, procgroup.ErrNoProcess):
		return event.FromTurnGone, 0
	case err != nil:
		return event.FromTurnUnknown, 0
	case where == procgroup.Carries:
		return event.FromTurnCarries, via
	case where == procgroup.InGroup:
		return event.FromTurnGroup, via
	}
	return "", 0
}

// maxRefusals bounds the Refused records a turn journals: a command that
// tries again and again is refused every time, and journaled the first
// times.
const maxRefusals = 32

// refusals is what a turn journaled as refused: each kind of attempt once
// (a gate's answers once per gate, input once, a hook event once per
// name, a conversation id once per id), at most maxRefusals in all.
type refusals struct {
	mu   sync.Mutex
	seen map[string]bool
}

// first reports whether an attempt of key is the first the turn refuses,
// and marks it refused.
func (r *refusals) first(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[key] || len(r.seen) >= maxRefusals {
		return false
	}
	if r.seen == nil {
		r.seen = make(map[string]bool)
	}
	r.seen[key] = true
	return true
}

// journalRefused journals ev, a refusal in turn t (nil: none runs), once
// per key; best effort: the refusal stands whether or not it is on
// record (a failed append faults the session).
func (s *Session) journalRefused(t *turnRun, key string, ev event.Refused) {
	if t != nil && !t.refused.first(key) {
		return
	}
	ctx, cancel := s.bg()
	defer cancel()
	publish := func() { _, _ = s.hub.Publish(ctx, s.loopID, ev) }
	if t == nil {
		publish()
		return
	}
	t.record(publish)
}
