package rig

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"looprig/rig/storage"
)

// A Lister's listing kept on disk for the next process. `looprig ls` and
// the TUI's first frame each began with a full listing: every catalog
// entry and every lease read again (a thousand of each at a thousand
// sessions), though nothing had changed since the last process listed.
// With Keep, a Lister writes its listing to a file with the store's
// durable stamp taken before it (storage.DurableStamper: it compares
// across processes), and a new Lister whose store's stamp still stands
// there, less than FullRelistEvery after that listing and on the same
// machine, starts from the file: it asks its liveness option about the
// sessions held on this machine only (askLiveness), as it does every
// RelistEvery, and lists again when an answer is neither serving nor
// stopped. A holder's death moves no durable stamp; it is what that
// question finds. The call after one that started from the file lists in
// full: a Lister that goes on listing (the TUI's, whose first frame the
// file makes quick) learns holders' deaths from the probes of a full
// listing (the change stamp), not from the file.

// LeaseUnknownReason begins the Reason of a row whose lease could not be
// probed: such a session may be held. A listing with one is not kept
// (the next process probes again).
const LeaseUnknownReason = "lease state unknown: "

// keepable reports whether infos may be kept: every lease was told.
func keepable(infos []SessionInfo) bool {
	for _, in := range infos {
		if strings.HasPrefix(in.Reason, LeaseUnknownReason) {
			return false
		}
	}
	return true
}

// keptListingVersion is the kept file's format; another one is not read.
const keptListingVersion = 1

// keptListing is the file's content.
type keptListing struct {
	V        int           `json:"v"`
	Stamp    string        `json:"stamp"`
	Host     string        `json:"host"`
	Listed   time.Time     `json:"listed"`
	Sessions []SessionInfo `json:"sessions"`
}

// Keep makes l keep its listings in the file at path (its directory is
// made 0700, the file 0600: it holds what the catalog entries hold) and
// start from the one kept there when it still holds. A store without
// durable stamps keeps nothing. Call it before the first List.
//
// The directory is made here, before the first listing: made at the
// first save, in a directory store's own directory, it moved the store's
// stamp after the listing the file holds, so that the next process found
// the file stale and the TUI listed in full again.
func (l *Lister) Keep(path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keepPath = path
	if path != "" {
		os.MkdirAll(filepath.Dir(path), 0o700) // else saveKept says why
	}
}

// durableStamp is the store's durable stamp, "" when it has none it
// trusts now.
func (l *Lister) durableStamp(ctx context.Context) string {
	ds, ok := l.store.(storage.DurableStamper)
	if !ok || l.keepPath == "" {
		return ""
	}
	stamp, ok, err := ds.DurableStamp(ctx)
	if err != nil || !ok {
		return ""
	}
	return stamp
}

// loadKept returns the kept listing when it was listed at stamp, on this
// machine, less than fullEvery ago.
func (l *Lister) loadKept(stamp string, fullEvery time.Duration) (infos []SessionInfo, listed time.Time, ok bool) {
	if stamp == "" {
		return nil, time.Time{}, false
	}
	b, err := os.ReadFile(l.keepPath)
	if err != nil {
		return nil, time.Time{}, false
	}
	var k keptListing
	if json.Unmarshal(b, &k) != nil || k.V != keptListingVersion || k.Stamp != stamp || k.Host != l.host {
		return nil, time.Time{}, false
	}
	if age := time.Since(k.Listed); age < 0 || age >= fullEvery {
		return nil, time.Time{}, false
	}
	if k.Sessions == nil {
		k.Sessions = []SessionInfo{}
	}
	return k.Sessions, k.Listed, true
}

// saveKept writes infos, listed at stamp at listed, to the kept file
// (a temporary file renamed over it: a reader sees one whole listing).
func (l *Lister) saveKept(stamp string, listed time.Time, infos []SessionInfo) error {
	if stamp == "" {
		return nil
	}
	b, err := json.Marshal(keptListing{V: keptListingVersion, Stamp: stamp, Host: l.host, Listed: listed, Sessions: infos})
	if err != nil {
		return err
	}
	dir := filepath.Dir(l.keepPath)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".listing-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), l.keepPath)
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("keep the listing in %s: %w", l.keepPath, werr)
	}
	return nil
}
