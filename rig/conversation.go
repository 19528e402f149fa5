package rig

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// An agent session's conversation (engine.Agent): looprig mints its id
// when it creates the session and journals it (AgentConversation), so
// every turn, here or on another machine after a restore, continues that
// conversation and no other. The agent keeps the conversation in a
// transcript file outside the workspace; at the end of each turn the
// runtime stores the transcript as a blob and journals it
// (AgentTranscript), and before each turn it puts the stored transcript
// where the agent looks for it, unless the file there already continues it
// (the same machine, after a crash mid-turn).

// agent is the session's engine as an agent, nil for other engines.
func (s *Session) agent() engine.Agent {
	a, _ := s.eng.(engine.Agent)
	return a
}

// startConversation journals a new conversation id for an agent session
// that has none (at creation; a session restored under an agent engine it
// was not created with), unless the agent names its conversations itself
// (engine.Agent.NewConversation returns ""): then its first turn reports
// the id (Conversation).
func (s *Session) startConversation(ctx context.Context) error {
	a := s.agent()
	if a == nil {
		return nil
	}
	s.mu.Lock()
	has := s.state.Conversation != nil && s.state.Conversation.Agent == a.Name()
	s.mu.Unlock()
	id := a.NewConversation()
	if has || id == "" { // an agent that names its conversations itself does so at the first turn
		return nil
	}
	_, err := s.hub.Publish(ctx, "", event.AgentConversation{Agent: a.Name(), ID: id})
	return err
}

// TranscriptError: the stored transcript of a session's conversation could
// not be put where the agent looks for it, so the turn cannot continue the
// conversation and does not run.
type TranscriptError struct {
	Conversation string
	Path         string
	Err          error
}

func (e *TranscriptError) Error() string {
	return fmt.Sprintf("put back the transcript of conversation %s at %s: %v", e.Conversation, e.Path, e.Err)
}

func (e *TranscriptError) Unwrap() error { return e.Err }

// prepareConversation returns the conversation turn t continues and
// whether the agent has it already (resume), after putting its stored
// transcript in place when the agent's file does not continue it.
func (s *Session) prepareConversation(ctx context.Context) (id string, resume bool, err error) {
	a := s.agent()
	if a == nil {
		return "", false, nil
	}
	if err := s.startConversation(ctx); err != nil {
		return "", false, err
	}
	s.mu.Lock()
	var c Conversation
	if s.state.Conversation != nil && s.state.Conversation.Agent == a.Name() {
		c = *s.state.Conversation
	}
	s.mu.Unlock()
	if c.ID == "" { // the agent names it at this first turn
		return "", false, nil
	}
	path, err := a.TranscriptPath(s.ws.dir, c.ID)
	if err != nil {
		return "", false, &TranscriptError{Conversation: c.ID, Path: path, Err: err}
	}
	if c.Transcript != nil {
		if err := s.placeTranscript(ctx, path, c.Transcript); err != nil {
			return "", false, &TranscriptError{Conversation: c.ID, Path: path, Err: err}
		}
	}
	_, statErr := os.Stat(path)
	return c.ID, c.Started || statErr == nil, nil
}

// placeTranscript writes stored transcript tr at path, unless the file
// there begins with it (it is the same transcript, or one the agent
// continued since: an interrupted turn on this machine).
func (s *Session) placeTranscript(ctx context.Context, path string, tr *event.AgentTranscript) error {
	d, err := storage.ParseDigest(tr.Blob)
	if err != nil {
		return err
	}
	m, err := loadTranscript(ctx, s.rig.store, d)
	if err != nil {
		return err
	}
	if continues(path, m.SHA256, m.Size) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".looprig-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	err = writeTranscript(ctx, s.rig.store, m, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// saveTranscript stores the agent's transcript of the conversation after
// turn turnID and journals it, unless it is the one stored already or the
// agent wrote none. A failure is logged: the conversation goes on here,
// and a restore elsewhere continues from the last transcript stored.
func (s *Session) saveTranscript(ctx context.Context, turnID string) {
	a := s.agent()
	if a == nil {
		return
	}
	s.mu.Lock()
	var c Conversation
	if s.state.Conversation != nil {
		c = *s.state.Conversation
	}
	s.mu.Unlock()
	if c.ID == "" {
		return
	}
	path, err := a.TranscriptPath(s.ws.dir, c.ID)
	if err != nil {
		return
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		s.rig.log.Warn("agent transcript not stored", "session", s.id, "path", path, "err", err)
		return
	}
	defer f.Close()
	var prev *transcriptManifest // its chunks are stored: not put again
	if c.Transcript != nil {
		if pd, err := storage.ParseDigest(c.Transcript.Blob); err == nil {
			if m, err := loadTranscript(ctx, s.rig.store, pd); err == nil {
				prev = &m
			}
		}
	}
	d, size, err := putTranscript(ctx, s.rig.store, f, prev)
	if err != nil {
		s.rig.log.Warn("agent transcript not stored", "session", s.id, "path", path, "err", err)
		return
	}
	if c.Transcript != nil && c.Transcript.Blob == d.String() {
		return
	}
	if _, err := s.hub.Publish(ctx, "", event.AgentTranscript{Agent: a.Name(), ID: c.ID, Blob: d.String(), Bytes: size, TurnID: turnID}); err != nil {
		s.rig.log.Warn("agent transcript not journaled", "session", s.id, "err", err)
	}
}

// Conversation implements engine.AgentSink: the agent reported the
// conversation id of the turn (from: engine.FromStream, FromHook). The
// first report of the session's id is journaled (the conversation exists
// from then on, so the next turn resumes it). Another id than the
// session's is refused and journaled as such (event.Refused), never
// adopted: the next turn resumes the session's conversation, whatever a
// hook or the agent said. Only a session whose agent names its
// conversations itself, and has none yet (Codex's first turn), takes the
// id it is told.
func (k *turnSink) Conversation(id, from string) {
	s := k.s
	a := s.agent()
	if a == nil {
		return
	}
	s.mu.Lock()
	var c *Conversation
	if s.state.Conversation != nil && s.state.Conversation.Agent == a.Name() {
		c = s.state.Conversation
	}
	known := c != nil && c.ID == id && c.Started
	foreign := c != nil && c.ID != id
	s.mu.Unlock()
	switch {
	case known:
		return
	case foreign:
		source := event.SourceStream
		if from == engine.FromHook {
			source = event.SourceHook
		}
		s.rig.log.Warn("agent conversation refused", "session", s.id, "turn", k.t.id, "reported", id, "from", source, "kept", c.ID)
		k.flush(false)
		s.journalRefused(k.t, event.RefusedConversation+" "+id, event.Refused{TurnID: k.t.id, What: event.RefusedConversation,
			Agent: a.Name(), ID: printableWord(id, event.MaxRefusedDetail, "?"), Source: source})
		return
	}
	ctx, cancel := s.bg()
	defer cancel()
	k.flush(false)
	k.t.record(func() {
		_, _ = s.hub.Publish(ctx, "", event.AgentConversation{Agent: a.Name(), ID: id, TurnID: k.t.id}) // a failure faults the session
	})
}

// Notify implements engine.AgentSink: the agent asks for the user
// (event.AttentionAgent), in its own words (text, "" when it only waits),
// which the journal keeps as the agent's (Attention.Agent).
func (k *turnSink) Notify(text string) {
	name := ""
	if a := k.s.agent(); a != nil {
		name = a.Name()
	}
	k.attention(attentionSignal{reason: event.AttentionAgent, text: attentionText(text), agent: name})
}

// HookRefused implements engine.AgentSink: the turn's hook socket was sent
// an event the turn did not ask for; it changed nothing, and is journaled
// once per name (event.Refused).
func (k *turnSink) HookRefused(hook string) {
	s := k.s
	name := ""
	if a := s.agent(); a != nil {
		name = a.Name()
	}
	hook = printableWord(hook, event.MaxRefusedDetail, "?")
	s.rig.log.Warn("agent hook event refused", "session", s.id, "turn", k.t.id, "hook", hook)
	k.flush(false)
	s.journalRefused(k.t, event.RefusedHook+" "+hook, event.Refused{TurnID: k.t.id, What: event.RefusedHook, Agent: printableWord(name, event.MaxRefusedDetail, ""), Hook: hook})
}
