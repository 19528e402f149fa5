package rig

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"looprig/rig/checkpoint"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// SweepGrace is how recently a blob must have been put for SweepBlobs to
// spare it although no checkpoint on record references it: a checkpoint
// in progress (on any machine) puts its blobs before it journals the
// manifest that references them, and takes at most checkpointTimeout.
const SweepGrace = checkpointTimeout + 5*time.Minute

// SweepResult is what SweepBlobs did.
type SweepResult struct {
	Referenced   int   // blobs the sessions' checkpoints reference
	Deleted      int   // unreferenced blobs deleted
	DeletedBytes int64 // their size
	Recent       int   // unreferenced blobs spared: put within the grace
}

// SweepBlobs deletes the blobs of store that no checkpoint of any session
// references (a deleted session's, or a checkpoint that crashed before it
// was journaled) and that were last put more than grace ago. The
// references are every manifest any session's journal records and the
// blobs those manifests name, so older checkpoints (looprig diff) stay.
// It fails closed: a journal or a manifest it cannot read stops it before
// anything is deleted. It reads every journal of the store: its cost
// grows with the store.
func SweepBlobs(ctx context.Context, store storage.Store, grace time.Duration) (SweepResult, error) {
	var res SweepResult
	refs, err := referencedBlobs(ctx, store)
	if err != nil {
		return res, err
	}
	res.Referenced = len(refs)
	cutoff := time.Now().Add(-grace)
	var doomed []storage.BlobInfo
	err = store.ListBlobs(ctx, func(b storage.BlobInfo) error {
		switch {
		case refs[b.Digest]:
		case b.Modified.After(cutoff):
			res.Recent++
		default:
			doomed = append(doomed, b)
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("sweep blobs: %w", err)
	}
	for _, b := range doomed {
		// Put again since the listing: in use by a checkpoint in progress.
		if now, err := store.StatBlob(ctx, b.Digest); err != nil || now.Modified.After(cutoff) {
			res.Recent++
			continue
		}
		if err := store.DeleteBlob(ctx, b.Digest); err != nil {
			return res, fmt.Errorf("sweep blobs: %w", err)
		}
		res.Deleted++
		res.DeletedBytes += b.Size
	}
	return res, nil
}

// referencedBlobs is every blob a journal references: the manifests of
// the checkpoints any session's journal names and their files, and the
// last agent transcript it names with its chunks.
func referencedBlobs(ctx context.Context, store storage.Store) (map[storage.Digest]bool, error) {
	ids, err := sessionIDs(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("sweep blobs: %w", err)
	}
	refs := map[storage.Digest]bool{}
	for _, s := range ids {
		id, _ := uuid.Parse(s)
		manifests, transcripts, err := journaledBlobs(ctx, store, id)
		if err != nil {
			return nil, fmt.Errorf("sweep blobs: the checkpoints of session %s: %w", ShortID(s), err)
		}
		for _, d := range transcripts {
			m, err := loadTranscript(ctx, store, d)
			if err != nil {
				return nil, fmt.Errorf("sweep blobs: a transcript of session %s: %w", ShortID(s), err)
			}
			refs[d] = true
			for _, c := range m.Chunks {
				cd, _ := storage.ParseDigest(c)
				refs[cd] = true
			}
		}
		for _, d := range manifests {
			if refs[d] {
				continue
			}
			m, err := checkpoint.Load(ctx, store, d)
			if err != nil {
				return nil, fmt.Errorf("sweep blobs: a checkpoint of session %s: %w", ShortID(s), err)
			}
			refs[d] = true
			for _, e := range m.Entries {
				if e.Kind == checkpoint.File {
					refs[e.Digest] = true
				}
			}
		}
	}
	return refs, nil
}

// journaledBlobs lists the blobs session id's journal records and still
// needs: every checkpoint's manifest (diff reads old ones), and the last
// transcript of the agent's conversation (each transcript holds the ones
// before it, and a restore puts back only the last).
func journaledBlobs(ctx context.Context, store storage.Store, id uuid.UUID) (manifests, transcripts []storage.Digest, err error) {
	rp, err := ReadEvents(ctx, store, id, 0)
	if err != nil {
		return nil, nil, err
	}
	defer rp.Close()
	for rp.Next() {
		var list *[]storage.Digest
		var hex string
		switch ev := rp.Envelope().Event.(type) {
		case event.WorkspaceCheckpointed:
			list, hex = &manifests, ev.Manifest
		case event.AgentTranscript:
			transcripts = transcripts[:0]
			list, hex = &transcripts, ev.Blob
		default:
			continue
		}
		d, err := storage.ParseDigest(hex)
		if err != nil {
			return nil, nil, err
		}
		*list = append(*list, d)
	}
	return manifests, transcripts, rp.Err()
}
