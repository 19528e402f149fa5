// Catalog writes: the live session's catalog entry, the projection of its
// fold (catalogOf), rewritten after each state change and sealed by
// Shutdown.

package rig

import "time"

// catalogOf is the catalog entry of a session whose fold is st: the one
// projection of a State into a CatalogEntry. live holds what the fold
// does not know (the entry's lifecycle, the holder's lease, profile and
// workspace, the checkpoint it is taking); catalogOf sets the rest.
func catalogOf(st *State, live CatalogEntry) CatalogEntry {
	c := live
	c.Title, c.Turns = st.Title, st.Turns
	c.LastEnd, c.Attention = clone(st.LastEnd), clone(st.Attention)
	c.OpenTurn, c.TurnIndex, c.TurnSince = "", 0, time.Time{}
	if t := st.Turn(); t != nil {
		c.OpenTurn, c.TurnIndex, c.TurnSince = t.ID, t.Index, t.Started.UTC()
	}
	c.OpenGate, c.GateSince, c.GatePrompt = "", time.Time{}, ""
	if g := st.Gate(); g != nil {
		c.OpenGate, c.GateSince, c.GatePrompt = g.ID, g.Opened.UTC(), cutUTF8(g.Prompt, MaxCatalogPrompt)
	}
	c.Checkpoint = nil
	if cp := st.Checkpoint; cp != nil {
		c.Checkpoint = &CatalogCheckpoint{Manifest: cp.Manifest, Files: cp.Files, Bytes: cp.Bytes, At: cp.At.UTC()}
	}
	c.Worktree = nil
	if w := st.Worktree; w != nil {
		c.Worktree = &CatalogWorktree{Repo: w.Repo, Branch: w.Branch, Path: w.Path}
	}
	c.ForkedFrom = clone(st.ForkedFrom)
	c.Conversation = nil
	if cv := st.Conversation; cv != nil {
		c.Conversation = &CatalogConversation{Agent: cv.Agent, ID: cv.ID}
	}
	return c
}

// catalogEntry builds the session's catalog entry in state: its fold
// (catalogOf) and its live facts.
func (s *Session) catalogEntry(state CatalogState) CatalogEntry {
	s.mu.Lock()
	fold := s.state // a copy: Apply never writes into what it shares
	live := CatalogEntry{
		ID: s.id.String(), Profile: s.rig.profile.Name, Engine: s.rig.profile.Engine, Shell: s.rig.profile.shell(),
		Placement: s.ws.placement, Root: s.ws.root, State: state, Epoch: s.lease.Epoch(), LastSeq: s.journal.Tip(),
		Created: s.created, CheckpointMode: s.rig.profile.checkpointMode(),
	}
	if p := s.checkpointingLocked(); p != nil {
		p.Since = p.Since.UTC()
		live.Checkpointing = p
	}
	s.mu.Unlock()
	live.Updated = s.rig.now().UTC()
	return catalogOf(&fold, live)
}

// updateCatalog rewrites the catalog entry after a state change. It is
// best effort (the journal is the truth) and skipped once the session lost
// its lease (the successor owns the entry then) or Shutdown wrote the last
// entry.
func (s *Session) updateCatalog() {
	s.writeCatalogState(CatalogRunning, "", false)
}

// writeCatalogState writes the entry in state; final seals it: no later
// write happens (Shutdown's last entry, written before the leases go).
func (s *Session) writeCatalogState(state CatalogState, reason string, final bool) error {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if s.catSealed || s.Err() != nil {
		return nil
	}
	select {
	case <-s.lease.Lost():
		return nil
	default:
	}
	s.catSealed = final
	ctx, cancel := s.bg()
	defer cancel()
	c := s.catalogEntry(state)
	c.Reason = reason
	err := writeCatalog(ctx, s.rig.store, c)
	if err != nil {
		s.rig.log.Warn("catalog write failed", "session", s.id, "err", err)
	}
	return err
}
