package explain_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/explain"
	"looprig/rig/storage"
)

func TestRestoreSkipped(t *testing.T) {
	id := uuid.MustParse("0b9e3a4e-1111-4222-8333-444455556666")
	holder := storage.Holder{PID: 42, Host: "box"}
	held := &storage.LeaseHeldError{Name: "sessions/" + id.String(), HolderEpoch: 7, Holder: holder}
	rootHeld := &storage.LeaseHeldError{Name: storage.RootLeaseName("ab12"), HolderEpoch: 5, Holder: holder}
	restore := func(kind rig.RestoreErrorKind, cause error) error {
		return fmt.Errorf("restore: %w", &rig.RestoreError{Kind: kind, Session: id, Cause: cause})
	}
	tests := []struct {
		name   string
		err    error
		skip   explain.Skip
		holder storage.Holder
	}{
		{"restored", nil, explain.NotSkipped, storage.Holder{}},
		{"not crashed", fmt.Errorf("host: %w", &rig.NotCrashedError{Session: id}), explain.SkipNotCrashed, storage.Holder{}},
		{"session lease held", restore(rig.RestoreLeaseFailed, fmt.Errorf("acquire: %w", held)), explain.SkipHeld, holder},
		{"root busy", restore(rig.RestoreLeaseFailed, &rig.WorkspaceRootBusyError{Root: "/r", HolderEpoch: 5, Cause: rootHeld}),
			explain.NotSkipped, storage.Holder{}},
		{"replay failed", restore(rig.RestoreReplayFailed, errors.New("bad frame")), explain.NotSkipped, storage.Holder{}},
		{"unclassified", errors.New("boom"), explain.NotSkipped, storage.Holder{}},
	}
	for _, tc := range tests {
		skip, h := explain.RestoreSkipped(tc.err)
		if skip != tc.skip || h != tc.holder {
			t.Errorf("%s: RestoreSkipped = %v, %+v; want %v, %+v", tc.name, skip, h, tc.skip, tc.holder)
		}
	}
}
