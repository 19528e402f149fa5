package checkpoint

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"looprig/rig/storage"
)

// ChangeKind is how a path differs between two checkpoints.
type ChangeKind string

// The kinds of change.
const (
	Added       ChangeKind = "added"
	Removed     ChangeKind = "removed"
	Modified    ChangeKind = "modified"     // content or symlink target (the mode may have changed too)
	ModeChanged ChangeKind = "mode changed" // same content, other mode
	TypeChanged ChangeKind = "type changed" // file, symlink or directory became another
)

// FileChange is one path that differs. Old* describe the path before
// (zero when Added), New* after (zero when Removed).
type FileChange struct {
	Path             string
	Kind             ChangeKind
	OldKind, NewKind Kind
	OldMode, NewMode fs.FileMode
	OldSize, NewSize int64
	OldTarget        string // symlinks
	NewTarget        string
	OldDigest        storage.Digest // files
	NewDigest        storage.Digest
	Patch            string // Diff: a unified diff of a text file's lines, "" when none
	Summary          string // Diff: one line when there is no patch (binary, too large, too different)
	LinesAdded       int    // Diff: lines added and removed, when Counted
	LinesRemoved     int
	Counted          bool
	Binary           bool // Diff: either side is not text

	oldChunks, newChunks []Chunk // where the content is, for patch
}

// DiffOptions tune Diff.
type DiffOptions struct {
	// MaxTextBytes: a file larger than this on either side gets a
	// summary line, not a patch (default 1 MiB).
	MaxTextBytes int64
	// MaxEdits: when more lines than this are added plus removed, a
	// summary line, not a patch (default 4000).
	MaxEdits int
	// Context is the lines of context around changes (default 3; < 0: 0).
	Context int
	// NoPatch leaves Patch and Summary empty and reads no file content.
	NoPatch bool
}

func (o DiffOptions) withDefaults() DiffOptions {
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = 1 << 20
	}
	if o.MaxEdits <= 0 {
		o.MaxEdits = 4000
	}
	if o.Context == 0 {
		o.Context = 3
	} else if o.Context < 0 {
		o.Context = 0
	}
	return o
}

// Diff lists what changed from checkpoint before to checkpoint after
// (manifest digests), sorted by path, with unified diffs of text files
// (valid UTF-8 without NUL, at most MaxTextBytes): "--- a/path", "+++
// b/path" ("/dev/null" for a side that is absent), "@@ -l,n +l,n @@"
// hunks. Every blob read is verified to its end. A zero digest stands for
// the empty workspace (before a session's first checkpoint).
func Diff(ctx context.Context, blobs storage.BlobStore, before, after storage.Digest, opts DiffOptions) ([]FileChange, error) {
	opts = opts.withDefaults()
	a, err := loadOrEmpty(ctx, blobs, before)
	if err != nil {
		return nil, err
	}
	b, err := loadOrEmpty(ctx, blobs, after)
	if err != nil {
		return nil, err
	}
	changes := compareManifests(a, b)
	if opts.NoPatch {
		return changes, nil
	}
	for i := range changes {
		if err := patch(ctx, blobs, &changes[i], opts); err != nil {
			return nil, err
		}
	}
	return changes, nil
}

// loadOrEmpty is Load, or the empty manifest for the zero digest.
func loadOrEmpty(ctx context.Context, blobs storage.BlobStore, d storage.Digest) (*Manifest, error) {
	if d.IsZero() {
		return &Manifest{}, nil
	}
	return Load(ctx, blobs, d)
}

// Compare lists the paths that differ from a to b, sorted, without
// patches (Diff with NoPatch, on manifests in hand). Entries a rule left
// out are in neither.
func Compare(a, b *Manifest) []FileChange { return compareManifests(a, b) }

// SameEntry reports whether a and b are the same entry (kind, mode,
// content or target); where their content is stored does not count.
func SameEntry(a, b Entry) bool {
	return a.Path == b.Path && a.Kind == b.Kind && a.Mode == b.Mode && a.Size == b.Size && a.Digest == b.Digest && a.Target == b.Target
}

// compareManifests lists the paths that differ from a to b.
func compareManifests(a, b *Manifest) []FileChange {
	var out []FileChange
	i, j := 0, 0
	for i < len(a.Entries) || j < len(b.Entries) {
		switch {
		case j == len(b.Entries) || i < len(a.Entries) && a.Entries[i].Path < b.Entries[j].Path:
			c := FileChange{Path: a.Entries[i].Path, Kind: Removed}
			c.setOld(&a.Entries[i])
			out = append(out, c)
			i++
		case i == len(a.Entries) || b.Entries[j].Path < a.Entries[i].Path:
			c := FileChange{Path: b.Entries[j].Path, Kind: Added}
			c.setNew(&b.Entries[j])
			out = append(out, c)
			j++
		default:
			ea, eb := &a.Entries[i], &b.Entries[j]
			i++
			j++
			c := FileChange{Path: ea.Path}
			c.setOld(ea)
			c.setNew(eb)
			switch {
			case ea.Kind != eb.Kind:
				c.Kind = TypeChanged
			case ea.Kind == File && ea.Digest != eb.Digest, ea.Kind == Symlink && ea.Target != eb.Target:
				c.Kind = Modified
			case ea.Mode != eb.Mode:
				c.Kind = ModeChanged
			default:
				continue
			}
			out = append(out, c)
		}
	}
	return out
}

func (c *FileChange) setOld(e *Entry) {
	c.OldKind, c.OldMode, c.OldSize, c.OldTarget, c.OldDigest, c.oldChunks = e.Kind, e.Mode, e.Size, e.Target, e.Digest, e.Chunks
}

func (c *FileChange) setNew(e *Entry) {
	c.NewKind, c.NewMode, c.NewSize, c.NewTarget, c.NewDigest, c.newChunks = e.Kind, e.Mode, e.Size, e.Target, e.Digest, e.Chunks
}

// patch fills c's Patch or Summary when a file's content changed.
func patch(ctx context.Context, blobs storage.BlobStore, c *FileChange, opts DiffOptions) error {
	oldFile, newFile := c.OldKind == File, c.NewKind == File
	switch c.Kind {
	case Added, Removed, Modified:
	default:
		return nil
	}
	if !oldFile && !newFile {
		return nil // symlinks and directories: the fields say it all
	}
	if c.Kind == Modified && !(oldFile && newFile) {
		return nil
	}
	if c.OldSize > opts.MaxTextBytes || c.NewSize > opts.MaxTextBytes {
		c.Binary = true // unknown, and too large to show anyway
		c.Summary = fmt.Sprintf("large file changed, %d → %d bytes", c.OldSize, c.NewSize)
		return nil
	}
	var oldText, newText []byte
	var err error
	if oldFile {
		if oldText, err = readContent(ctx, blobs, &Entry{Path: c.Path, Size: c.OldSize, Digest: c.OldDigest, Chunks: c.oldChunks}); err != nil {
			return err
		}
	}
	if newFile {
		if newText, err = readContent(ctx, blobs, &Entry{Path: c.Path, Size: c.NewSize, Digest: c.NewDigest, Chunks: c.newChunks}); err != nil {
			return err
		}
	}
	if !isText(oldText) || !isText(newText) {
		c.Binary = true
		c.Summary = fmt.Sprintf("binary file changed, %d → %d bytes", c.OldSize, c.NewSize)
		return nil
	}
	a, b := splitLines(string(oldText)), splitLines(string(newText))
	script, ok := lineDiff(a, b, opts.MaxEdits)
	if !ok {
		c.Summary = fmt.Sprintf("text file changed, %d lines → %d lines", len(a), len(b))
		return nil
	}
	hunks, added, removed := unified(script, opts.Context)
	c.LinesAdded, c.LinesRemoved, c.Counted = added, removed, true
	if hunks == "" {
		return nil // e.g. two empty files' digests cannot differ; kept for safety
	}
	from, to := "a/"+c.Path, "b/"+c.Path
	if !oldFile {
		from = "/dev/null"
	}
	if !newFile {
		to = "/dev/null"
	}
	c.Patch = "--- " + from + "\n+++ " + to + "\n" + hunks
	return nil
}

// readContent reads file e whole (the caller bounds its size), verified.
func readContent(ctx context.Context, blobs storage.BlobStore, e *Entry) ([]byte, error) {
	rc := openContent(ctx, blobs, e)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: diff %s: %w", e.Path, err)
	}
	return b, nil
}

// StatLine is one file of a --stat summary.
type StatLine struct {
	Path         string
	LinesAdded   int
	LinesRemoved int
	Counted      bool   // the line counts are known
	Note         string // else: the change's Summary, or its kind
}

// Stat returns a --stat-like summary of changes: per file the lines added
// and removed, and the totals of the counted ones.
func Stat(changes []FileChange) (lines []StatLine, added, removed int) {
	for _, c := range changes {
		l := StatLine{Path: c.Path, LinesAdded: c.LinesAdded, LinesRemoved: c.LinesRemoved, Counted: c.Counted}
		if !c.Counted {
			l.Note = c.Summary
			if l.Note == "" {
				l.Note = string(c.Kind)
			}
		}
		added += c.LinesAdded
		removed += c.LinesRemoved
		lines = append(lines, l)
	}
	return lines, added, removed
}

// FormatStat renders Stat as git diff --stat does, roughly:
//
//	path/a.go | 7 +++++--
//	bin/tool  | binary file changed, 10 → 12 bytes
//	2 files changed, 5 insertions(+), 2 deletions(-)
func FormatStat(changes []FileChange) string {
	lines, added, removed := Stat(changes)
	width := 0
	for _, l := range lines {
		width = max(width, len(l.Path))
	}
	var sb strings.Builder
	for _, l := range lines {
		if l.Counted {
			n := l.LinesAdded + l.LinesRemoved
			plus, minus := l.LinesAdded, l.LinesRemoved
			if n > 40 { // scale the bar to 40 columns
				plus, minus = l.LinesAdded*40/n, l.LinesRemoved*40/n
			}
			fmt.Fprintf(&sb, " %-*s | %d %s%s\n", width, l.Path, n, strings.Repeat("+", plus), strings.Repeat("-", minus))
		} else {
			fmt.Fprintf(&sb, " %-*s | %s\n", width, l.Path, l.Note)
		}
	}
	fmt.Fprintf(&sb, " %d files changed, %d insertions(+), %d deletions(-)\n", len(lines), added, removed)
	return sb.String()
}
