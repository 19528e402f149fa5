package engines

import (
	"context"
	"time"

	"github.com/google/uuid"

	"looprig/rig/storage"
	"looprig/search"
)

// The lines the other engines index are the ones looprig's index makes of
// the journals (search.ReadLines), and checkLines compares the two sets
// line for line before anything is measured.

// doc is one line to index.
type doc struct {
	Session uuid.UUID
	Turn    int
	Kind    search.Kind
	At      time.Time
	Text    string
}

// extractSessions reads the journals of sessions ids in order and calls
// emit with each line.
func extractSessions(ctx context.Context, st storage.Store, ids []uuid.UUID, emit func(doc)) error {
	for _, id := range ids {
		err := search.ReadLines(ctx, st, id, func(l search.Line) {
			emit(doc{Session: id, Turn: l.Turn, Kind: l.Kind, At: l.At, Text: l.Text})
		})
		if err != nil {
			return err
		}
	}
	return nil
}
