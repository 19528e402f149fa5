package rig

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"looprig/rig/storage/memstore"
)

// A hand-over is refused when the holder does not checkpoint the
// workspace: the holder's mode as its catalog entry records it, else the
// mode of the profile the taker would restore it with.
func TestCheckHandOff(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	id := uuid.New()
	exclusive := Profile{Name: "work", Engine: "shell", Placement: PlacementExclusive, Root: "/src", Checkpoint: CheckpointOff}
	put := func(mode CheckpointMode, placement Placement) {
		t.Helper()
		if err := writeCatalog(ctx, store, CatalogEntry{ID: id.String(), Profile: "held-as", Placement: placement,
			State: CatalogRunning, CheckpointMode: mode}); err != nil {
			t.Fatal(err)
		}
	}
	var refused *HandOffWithoutWorkspaceError

	// No catalog entry: the taker's profile decides.
	if err := CheckHandOff(ctx, store, id, exclusive); !errors.As(err, &refused) || refused.Profile != "work" ||
		!strings.Contains(err.Error(), `checkpoint = "off" in profile "work"`) || !strings.Contains(err.Error(), "would not come with it") {
		t.Fatalf("exclusive without checkpoint, no entry: %v", err)
	}
	stop := exclusive
	stop.Checkpoint = CheckpointStop
	if err := CheckHandOff(ctx, store, id, stop); err != nil {
		t.Fatalf("exclusive with checkpoint = stop: %v", err)
	}
	if err := CheckHandOff(ctx, store, id, DefaultProfile()); err != nil {
		t.Fatalf("session placement (checkpoint = turn by default): %v", err)
	}
	// An entry from before modes were recorded: still the taker's.
	put("", PlacementExclusive)
	if err := CheckHandOff(ctx, store, id, stop); err != nil {
		t.Fatalf("an entry without a mode, taker's profile checkpoints: %v", err)
	}
	// The holder's recorded mode wins over the taker's profile.
	put(CheckpointOff, PlacementExclusive)
	if err := CheckHandOff(ctx, store, id, DefaultProfile()); !errors.As(err, &refused) || refused.Profile != "held-as" {
		t.Fatalf("the holder does not checkpoint: %v", err)
	}
	put(CheckpointTurn, PlacementSession)
	if err := CheckHandOff(ctx, store, id, exclusive); err != nil {
		t.Fatalf("the holder checkpoints each turn: %v", err)
	}
	put(CheckpointOff, PlacementShared)
	if err := CheckHandOff(ctx, store, id, exclusive); !errors.As(err, &refused) || !strings.Contains(err.Error(), "shared workspace is never checkpointed") {
		t.Fatalf("a shared workspace: %v", err)
	}
}
