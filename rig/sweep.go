package rig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"looprig/rig/checkpoint"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// SweepGrace is how recently a blob must have been put (or renewed) for
// SweepBlobs to spare it although no checkpoint on record references it:
// a checkpoint in progress (on any machine) puts its blobs, and renews
// those it reuses, before it journals the manifest that references them,
// and takes at most checkpointTimeout.
const SweepGrace = checkpointTimeout + 5*time.Minute

// SweepOptions tune SweepBlobs.
type SweepOptions struct {
	// Grace spares unreferenced blobs put or renewed this recently.
	Grace time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Workspaces is this machine's directory of session workspaces,
	// where each session keeps its checkpoints' stat index: the blobs an
	// index names are spared too. "" reads none.
	Workspaces string
}

// SweepResult is what SweepBlobs did.
type SweepResult struct {
	Referenced   int   // blobs the sessions' checkpoints (and this machine's indexes) reference
	Deleted      int   // unreferenced blobs deleted
	DeletedBytes int64 // their size
	Recent       int   // unreferenced blobs spared: put within the grace
}

// SweepBlobs deletes the blobs of store that no checkpoint of any session
// references (a deleted session's, or a checkpoint that crashed before it
// was journaled), that no stat index in opts.Workspaces names, and that
// were last put or renewed before the grace. The references are every
// checkpoint any session's journal records, with the packs (or, for an
// old checkpoint, the file blobs) it names, so older checkpoints (looprig
// diff) stay; and each journal's last agent transcript. It fails closed:
// a journal or a manifest it cannot read stops it before anything is
// deleted. It reads every journal of the store: its cost grows with the
// store. The deletion is in bulk, each blob only if it was not renewed
// since the listing (storage.BlobStore.DeleteBlobs).
func SweepBlobs(ctx context.Context, store storage.Store, opts SweepOptions) (SweepResult, error) {
	var res SweepResult
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	refs, err := referencedBlobs(ctx, store, nil)
	if err != nil {
		return res, err
	}
	for d := range indexedBlobs(opts.Workspaces) {
		refs[d] = true
	}
	res.Referenced = len(refs)
	cutoff := now().Add(-opts.Grace)
	var doomed []storage.Digest
	err = store.ListBlobs(ctx, func(b storage.BlobInfo) error {
		switch {
		case refs[b.Digest]:
		case !b.Modified.Before(cutoff):
			res.Recent++
		default:
			doomed = append(doomed, b.Digest)
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("sweep blobs: %w", err)
	}
	deleted, err := deleteBlobs(ctx, store, doomed, cutoff)
	for _, b := range deleted {
		res.Deleted++
		res.DeletedBytes += b.Size
	}
	res.Recent += len(doomed) - len(deleted)
	if err != nil {
		return res, fmt.Errorf("sweep blobs: %w", err)
	}
	return res, nil
}

// referencedBlobs is every blob a journal references, but those of the
// sessions in skip: the manifests of the checkpoints any session's
// journal names and what they name, and the last agent transcript it
// names with its chunks.
func referencedBlobs(ctx context.Context, store storage.Store, skip map[string]bool) (map[storage.Digest]bool, error) {
	ids, err := sessionIDs(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("sweep blobs: %w", err)
	}
	refs := map[storage.Digest]bool{}
	for _, s := range ids {
		if skip[s] {
			continue
		}
		id, _ := uuid.Parse(s)
		blobs, _, err := sessionBlobs(ctx, store, id, false)
		if err != nil {
			return nil, fmt.Errorf("sweep blobs: %w", err)
		}
		for _, d := range blobs {
			refs[d] = true
		}
	}
	return refs, nil
}

// sessionBlobs lists the blobs session id's journal references (see
// referencedBlobs) and when it last journaled a checkpoint or transcript.
// lenient skips a manifest or transcript that cannot be read rather than
// failing (a deletion frees what it can find).
func sessionBlobs(ctx context.Context, store storage.Store, id uuid.UUID, lenient bool) ([]storage.Digest, time.Time, error) {
	manifests, transcripts, last, err := journaledBlobs(ctx, store, id)
	if err != nil {
		return nil, last, fmt.Errorf("the checkpoints of session %s: %w", ShortID(id.String()), err)
	}
	var out []storage.Digest
	for _, d := range transcripts {
		m, err := loadTranscript(ctx, store, d)
		if err != nil {
			if lenient {
				continue
			}
			return nil, last, fmt.Errorf("a transcript of session %s: %w", ShortID(id.String()), err)
		}
		out = append(out, d)
		for _, c := range m.Chunks {
			cd, _ := storage.ParseDigest(c)
			out = append(out, cd)
		}
	}
	seen := map[storage.Digest]bool{}
	for _, d := range manifests {
		if seen[d] {
			continue
		}
		seen[d] = true
		refs, err := checkpoint.References(ctx, store, d)
		if err != nil {
			if lenient {
				continue
			}
			return nil, last, fmt.Errorf("a checkpoint of session %s: %w", ShortID(id.String()), err)
		}
		out = append(out, refs...)
	}
	return out, last, nil
}

// journaledBlobs lists the blobs session id's journal records and still
// needs: every checkpoint's manifest (diff reads old ones), and the last
// transcript of the agent's conversation (each transcript holds the ones
// before it, and a restore puts back only the last); and the time of the
// last such record.
func journaledBlobs(ctx context.Context, store storage.Store, id uuid.UUID) (manifests, transcripts []storage.Digest, last time.Time, err error) {
	rp, err := ReadEvents(ctx, store, id, 0)
	if err != nil {
		return nil, nil, last, err
	}
	defer rp.Close()
	for rp.Next() {
		env := rp.Envelope()
		var list *[]storage.Digest
		var hex string
		switch ev := env.Event.(type) {
		case event.WorkspaceCheckpointed:
			list, hex = &manifests, ev.Manifest
		case event.WorkspaceReverted:
			list, hex = &manifests, ev.Manifest
		case event.AgentTranscript:
			transcripts = transcripts[:0]
			list, hex = &transcripts, ev.Blob
		default:
			continue
		}
		d, err := storage.ParseDigest(hex)
		if err != nil {
			return nil, nil, last, err
		}
		*list = append(*list, d)
		last = env.At
	}
	return manifests, transcripts, last, rp.Err()
}

// indexedBlobs is every pack the stat indexes in workspaces name (see
// indexPath); an index that cannot be read names nothing (it is a cache:
// a checkpoint confirms what an index it cannot trust names before it
// reuses it).
func indexedBlobs(workspaces string) map[storage.Digest]struct{} {
	out := map[storage.Digest]struct{}{}
	if workspaces == "" {
		return out
	}
	des, err := os.ReadDir(workspaces)
	if err != nil {
		return out
	}
	for _, de := range des {
		name := de.Name()
		if !de.Type().IsRegular() || !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".index") || !isSessionID(name[1:len(name)-len(".index")]) {
			continue
		}
		ix, err := readIndexFile(filepath.Join(workspaces, name))
		if err != nil {
			continue
		}
		for d := range ix.Packs() {
			out[d] = struct{}{}
		}
	}
	return out
}

// readIndexFile reads a stat index file (at most maxIndexFile bytes).
func readIndexFile(path string) (*checkpoint.Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIndexFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxIndexFile {
		return nil, errors.New("index file too large")
	}
	return checkpoint.UnmarshalIndex(b)
}

// deleteBlobs deletes the blobs ds last modified before cutoff, in bulk
// (storage.BlobStore.DeleteBlobs).
func deleteBlobs(ctx context.Context, store storage.BlobStore, ds []storage.Digest, cutoff time.Time) ([]storage.BlobInfo, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	return store.DeleteBlobs(ctx, ds, cutoff)
}

// FreedBlobs is what FreeSessionBlobs deleted and kept of a session's
// blobs.
type FreedBlobs struct {
	Deleted      int   // blobs only the deleted session referenced
	DeletedBytes int64 //
	Shared       int   // kept: another session references them
	Renewed      int   // kept: put or renewed after the session's last checkpoint (another session's checkpoint in progress may use them; gc deletes them once the grace is over)
}

// FreeSessionBlobs deletes at once the blobs the deleted sessions
// referenced (DeletedSession.Blobs) that no other session's journal
// references, except those put or renewed after the session last
// journaled a checkpoint: a checkpoint in progress elsewhere may be about
// to reference them, and SweepBlobs deletes them once the grace is over.
// It reads every other journal of the store once, and returns what it
// did for each session, in order.
func FreeSessionBlobs(ctx context.Context, store storage.Store, deleted []DeletedSession) ([]FreedBlobs, error) {
	out := make([]FreedBlobs, len(deleted))
	skip := map[string]bool{}
	some := false
	for _, d := range deleted {
		skip[d.ID] = true
		some = some || len(d.Blobs) > 0
	}
	if !some {
		return out, nil
	}
	others, err := referencedBlobs(ctx, store, skip)
	if err != nil {
		return out, fmt.Errorf("free the deleted sessions' blobs: %w", err)
	}
	done := map[storage.Digest]bool{}
	for i, d := range deleted {
		var mine []storage.Digest
		for _, b := range d.Blobs {
			switch {
			case done[b]:
			case others[b]:
				out[i].Shared++
			default:
				mine = append(mine, b)
			}
			done[b] = true
		}
		cutoff := d.LastCheckpoint.Add(time.Second) // the store's clock may run a little ahead of the journal's
		if d.LastCheckpoint.IsZero() {
			cutoff = time.Now()
		}
		freed, err := deleteBlobs(ctx, store, mine, cutoff)
		gone := map[storage.Digest]bool{}
		for _, b := range freed {
			out[i].Deleted++
			out[i].DeletedBytes += b.Size
			gone[b.Digest] = true
		}
		if err != nil {
			return out, fmt.Errorf("free the blobs of session %s: %w", ShortID(d.ID), err)
		}
		for _, b := range mine {
			if _, err := store.StatBlob(ctx, b); !gone[b] && err == nil {
				out[i].Renewed++
			}
		}
	}
	return out, nil
}
