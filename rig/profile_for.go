package rig

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

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
// lookup; *ProfileGoneError, listing known, when lookup does not know it;
// DefaultProfile() when the session recorded none. Records that cannot be
// read count as recording none: the restore that follows reads them again
// and reports what is wrong with them.
func ProfileFor(ctx context.Context, store storage.Store, id uuid.UUID, lookup func(name string) (Profile, bool), known []string) (Profile, error) {
	name := recordedProfile(ctx, store, id)
	if name == "" {
		return DefaultProfile(), nil
	}
	p, ok := lookup(name)
	if !ok {
		return Profile{}, &ProfileGoneError{Session: id.String(), Profile: name, Known: known}
	}
	return p, nil
}

// recordedProfile names the profile session id was created with: from its
// catalog entry, else from its SessionStarted (among the first records);
// "" when neither says.
func recordedProfile(ctx context.Context, store storage.Store, id uuid.UUID) string {
	if c, err := ReadCatalog(ctx, store, id.String()); err == nil && c.Profile != "" {
		return c.Profile
	}
	rp, err := ReadRecords(ctx, store, id, 0)
	if err != nil {
		return ""
	}
	defer rp.Close()
	for i := 0; i < 16 && rp.Next(); i++ {
		if s, ok := rp.Record().Event.(event.SessionStarted); ok {
			return s.Rig
		}
	}
	return ""
}
