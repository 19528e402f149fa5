package rig

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// ProfileGoneError: the profile a session recorded is no longer defined
// where it is being restored.
type ProfileGoneError struct {
	Session string
	Profile string
	Known   []string
}

func (e *ProfileGoneError) Error() string {
	return fmt.Sprintf("session %s was created with profile %q, which is not configured any more (known profiles: %s)",
		ShortID(e.Session), e.Profile, strings.Join(e.Known, ", "))
}

// ProfileFor returns the profile session id restores with: the one it
// recorded (its catalog entry's, else its SessionStarted's), looked up with
// lookup, placed as the session recorded unless it pins a placement
// (AsRecorded); *ProfileGoneError, listing known, when lookup does not know it;
// DefaultProfile() when the session recorded none. Records that cannot be
// read count as recording none: the restore that follows reads them again
// and reports what is wrong with them.
func ProfileFor(ctx context.Context, store storage.Store, id uuid.UUID, lookup func(name string) (Profile, bool), known []string) (Profile, error) {
	rec := readRecorded(ctx, store, id)
	if rec.profile == "" {
		return rec.apply(DefaultProfile()), nil
	}
	p, ok := lookup(rec.profile)
	if !ok {
		return Profile{}, &ProfileGoneError{Session: id.String(), Profile: rec.profile, Known: known}
	}
	return rec.apply(p), nil
}

// AsRecorded is p with what session id recorded where p leaves it open:
// the placement and root (its catalog entry's, else its SessionStarted's)
// unless p pins a placement (Profile.PlacementPinned), so that a session
// lives where it was created and every restore (CLI, TUI, a host) puts it
// back there; and the shell its holder ran turns in (its catalog entry's)
// when p names none and that shell is an executable here, so that a
// restore from a cron job whose $SHELL is /bin/sh does not switch the
// session's shell (a profile's shell key changes it, as drift). A session
// that recorded nothing readable keeps p's; the restore that follows
// reads the journal again and reports what is wrong with it.
func AsRecorded(ctx context.Context, store storage.Store, id uuid.UUID, p Profile) Profile {
	return readRecorded(ctx, store, id).apply(p)
}

// recorded is what a session recorded of how it runs: its profile's name,
// its place and its shell ("" and not placed when it says nothing).
type recorded struct {
	profile, shell string
	placement      Placement
	root           string
	placed         bool
}

// readRecorded reads what session id recorded: its catalog entry (a
// restore rewrites it, so a restore elsewhere with --root is what it
// says), else, for what it lacks, its SessionStarted (among the first
// records). Each is read once.
func readRecorded(ctx context.Context, store storage.Store, id uuid.UUID) recorded {
	var rec recorded
	if c, err := ReadCatalog(ctx, store, id.String()); err == nil {
		rec.profile, rec.shell = c.Profile, c.Shell
		rec.placement, rec.root, rec.placed = c.Placement, c.Root, validPlace(c.Placement, c.Root)
	}
	if rec.profile != "" && rec.placed {
		return rec
	}
	rp, err := ReadRecords(ctx, store, id, 0)
	if err != nil {
		return rec
	}
	defer rp.Close()
	for i := 0; i < 16 && rp.Next(); i++ {
		if s, ok := rp.Record().Event.Event.(event.SessionStarted); ok {
			if rec.profile == "" {
				rec.profile = s.Rig
			}
			if pl := Placement(s.Placement); !rec.placed && validPlace(pl, s.Root) {
				rec.placement, rec.root, rec.placed = pl, s.Root, true
			}
			break
		}
	}
	return rec
}

// apply gives p what rec recorded where p leaves it open (AsRecorded).
func (rec recorded) apply(p Profile) Profile {
	if p.Shell == "" && rec.shell != "" && engine.CheckShell(rec.shell) == nil {
		p.Shell = rec.shell
	}
	if !p.PlacementPinned && rec.placed {
		p.Placement, p.Root = rec.placement, rec.root
	}
	return p
}

// validPlace says whether placement and root make a place: a known
// placement, with a root when it needs one.
func validPlace(pl Placement, root string) bool {
	switch pl {
	case PlacementSession:
		return root == ""
	case PlacementExclusive, PlacementShared:
		return root != ""
	}
	return false
}

// PlaceNew is where a new session of p lives when no flag places it:
// with scratch, a private directory in the store (session placement);
// else p's placement when p pins one; else dir (absolute: where the
// user created the session) as an exclusive root, guarded by its root
// lease so that two sessions never share it by accident. Define then
// refuses a root that is not a project directory (CheckSensibleRoot,
// CheckPersistenceOverlap).
func PlaceNew(p Profile, dir string, scratch bool) Profile {
	switch {
	case scratch:
		p.Placement, p.Root = PlacementSession, ""
	case p.PlacementPinned:
	default:
		p.Placement, p.Root = PlacementExclusive, dir
	}
	return p
}

// RecordedWorktree is the git worktree looprig added for session id
// (event.WorktreeAdded): its catalog entry's, else its journal's (among
// the first records); nil when it has none, or its records cannot be
// read.
func RecordedWorktree(ctx context.Context, store storage.Store, id uuid.UUID) *CatalogWorktree {
	if c, err := ReadCatalog(ctx, store, id.String()); err == nil && c.Worktree != nil {
		return c.Worktree
	}
	rp, err := ReadRecords(ctx, store, id, 0)
	if err != nil {
		return nil
	}
	defer rp.Close()
	for i := 0; i < 16 && rp.Next(); i++ {
		if w, ok := rp.Record().Event.Event.(event.WorktreeAdded); ok {
			return &CatalogWorktree{Repo: w.Repo, Branch: w.Branch, Path: w.Path}
		}
	}
	return nil
}
