package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/internal/atomicfile"
)

// seenFile is the file that remembers, per session, the last turn end
// the user has looked at: the "since you last looked" of the sessions
// pane's marks, kept across restarts of the TUI. It lives in seenDir of
// the store's local directory (the user's own, 0700): a file written
// in a directory store's own directory moves its change stamp, and
// every TUI and search of the store would list all its sessions again
// after each save. Earlier versions kept it there; it is read from
// there when seenDir has none, and removed once saved in seenDir.
const (
	seenFile = "seen.json"
	seenDir  = "tui"
)

// seenState is what the user has looked at: per session, the id of the
// last turn end seen. A session's end is seen once the session is the one
// in front of the user (selected).
type seenState struct {
	path string            // "" keeps it in memory only (a store with no local files)
	ends map[string]string // session id → turn id of the last end seen
	// fresh: there was no file, so this is the TUI's first run on the
	// store: the ends of the first listing count as seen (a first start
	// does not mark every session that ever ran a turn).
	fresh bool
	// older is the file of an earlier version's location that the state
	// was read from: removed by the first save.
	older string

	saving bool // a save is in flight
	dirty  bool // changed since the snapshot being (or last) saved
}

// seenDoc is the file's format.
type seenDoc struct {
	V    int               `json:"v"`
	Ends map[string]string `json:"ends"`
}

// loadSeen reads the seen state at path, or when there is none at older
// ("": none; an earlier version's location); no file is a fresh state, an
// unreadable one an error and a fresh state (the marks start over).
func loadSeen(path, older string) (*seenState, error) {
	s := &seenState{path: path, ends: map[string]string{}, fresh: true}
	if path == "" {
		return s, nil
	}
	// Its directory is made now, before the first listing: made at the
	// first save, it moved a directory store's stamp after that listing,
	// and the TUI listed every session again at its next refresh.
	os.MkdirAll(filepath.Dir(path), 0o700) // else the save says why
	from := path
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && older != "" {
		from = older
		if b, err = os.ReadFile(older); err == nil {
			s.older = older
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	var doc seenDoc
	if err := json.Unmarshal(b, &doc); err != nil || doc.V != 1 {
		return s, fmt.Errorf("%s is not a seen-state file (version 1); it will be rewritten: %v", from, err)
	}
	if doc.Ends != nil {
		s.ends = doc.Ends
	}
	s.fresh = false
	return s, nil
}

// seenPath is where the seen state of a store whose local directory is
// dir lives, and where earlier versions kept it; "" for none.
func seenPath(dir string) (path, older string) {
	if dir == "" {
		return "", ""
	}
	return filepath.Join(dir, seenDir, seenFile), filepath.Join(dir, seenFile)
}

// seen says whether the turn end turnID of session id was seen.
func (s *seenState) seen(id, turnID string) bool { return s.ends[id] == turnID }

// mark records that the end turnID of session id was seen; it returns
// the command saving the state when one is due.
func (s *seenState) mark(id, turnID string) tea.Cmd {
	if s.ends[id] == turnID {
		return nil
	}
	s.ends[id] = turnID
	s.dirty = true
	return s.save()
}

// forget drops sessions that are gone (deleted) from the state.
func (s *seenState) forget(keep func(id string) bool) {
	for id := range s.ends {
		if !keep(id) {
			delete(s.ends, id)
			s.dirty = true
		}
	}
}

// seenSavedMsg: a save of the seen state finished.
type seenSavedMsg struct{ err error }

// save starts writing a snapshot unless a save is in flight (saved then
// starts the next one).
func (s *seenState) save() tea.Cmd {
	if s.path == "" || s.saving || !s.dirty {
		return nil
	}
	s.saving, s.dirty = true, false
	path, older, doc := s.path, s.older, seenDoc{V: 1, Ends: maps.Clone(s.ends)}
	return func() tea.Msg {
		err := writeSeen(path, doc)
		if err == nil && older != "" {
			os.Remove(older) // path is the one read from now on
		}
		return seenSavedMsg{err: err}
	}
}

// saved folds the end of a save, starting the next one if the state
// changed meanwhile.
func (s *seenState) saved(msg seenSavedMsg) tea.Cmd {
	s.saving = false
	if msg.err == nil {
		s.older = "" // removed by the save
	}
	return s.save()
}

// writeSeen writes doc to path atomically (0600), making its directory
// (0700).
func writeSeen(path string, doc seenDoc) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b)
}
