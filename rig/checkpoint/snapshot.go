package checkpoint

import (
	"bytes"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"looprig/rig/storage"
)

// A snapshot is the blob a checkpoint is named by (the manifest digest a
// journal records): where its root tree is, what it holds, and every
// pack it references, so that a sweep, a presence check or a deletion
// reads one small blob rather than the trees:
//
//	looprig-checkpoint 2
//	root <mode> <tree digest> <pack> <offset> <length>
//	size <files> <bytes>
//	p <pack digest>          one line per pack, sorted, each once
//
// Version 1 manifests (manifest.go: one flat list, a blob per file) are
// still read.
const snapshotHeader = "looprig-checkpoint 2"

// maxSnapshotPacks bounds the packs a decoded snapshot lists.
const maxSnapshotPacks = 1 << 20

// snapshot is a decoded snapshot.
type snapshot struct {
	RootMode fs.FileMode
	Root     treeRef // never SamePack
	Files    int
	Bytes    int64
	Packs    []storage.Digest // sorted, unique
}

func (s *snapshot) encode() []byte {
	var b bytes.Buffer
	b.WriteString(snapshotHeader)
	b.WriteString("\nroot ")
	line := appendMode(nil, s.RootMode)
	line = append(line, ' ')
	line = appendHex(line, s.Root.Digest)
	line = append(line, ' ')
	line = appendHex(line, s.Root.Pack)
	line = fmt.Appendf(line, " %d %d\nsize %d %d\n", s.Root.Offset, s.Root.Length, s.Files, s.Bytes)
	b.Write(line)
	for _, p := range s.Packs {
		b.WriteString("p ")
		b.Write(appendHex(nil, p))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// decodeSnapshot parses an encoded snapshot strictly.
func decodeSnapshot(data []byte) (*snapshot, error) {
	bad := func(line int, format string, args ...any) error {
		return &ManifestError{Line: line, Reason: fmt.Sprintf(format, args...)}
	}
	if len(data) > MaxManifestBytes {
		return nil, bad(0, "more than %d bytes", MaxManifestBytes)
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) < 4 || lines[len(lines)-1] != "" {
		return nil, bad(0, "snapshot too short or not ending in a newline")
	}
	lines = lines[:len(lines)-1]
	if lines[0] != snapshotHeader {
		return nil, bad(1, "header %.40q, want %q", lines[0], snapshotHeader)
	}
	s := &snapshot{}
	tag, rest, _ := strings.Cut(lines[1], " ")
	f, rest := fields(rest, 5)
	if tag != "root" || rest != "" {
		return nil, bad(2, "want the root line")
	}
	var err error
	if s.RootMode, err = parseMode(f[0]); err != nil {
		return nil, bad(2, "%v", err)
	}
	if s.Root.Digest, err = storage.ParseDigest(f[1]); err != nil {
		return nil, bad(2, "%v", err)
	}
	if s.Root.Pack, err = storage.ParseDigest(f[2]); err != nil {
		return nil, bad(2, "%v", err)
	}
	if s.Root.Offset, err = parseCount(f[3]); err != nil {
		return nil, bad(2, "%v", err)
	}
	if s.Root.Length, err = parseCount(f[4]); err != nil {
		return nil, bad(2, "%v", err)
	}
	tag, rest, _ = strings.Cut(lines[2], " ")
	f, rest = fields(rest, 2)
	if tag != "size" || rest != "" {
		return nil, bad(3, "want the size line")
	}
	files, err := parseCount(f[0])
	if err != nil || files > MaxEntries {
		return nil, bad(3, "files %.20q: want 0 to %d", f[0], MaxEntries)
	}
	s.Files = int(files)
	if s.Bytes, err = parseCount(f[1]); err != nil {
		return nil, bad(3, "%v", err)
	}
	if len(lines)-3 > maxSnapshotPacks {
		return nil, bad(0, "more than %d packs", maxSnapshotPacks)
	}
	for i, l := range lines[3:] {
		hex, ok := strings.CutPrefix(l, "p ")
		if !ok {
			return nil, bad(i+4, "want a pack line")
		}
		d, err := storage.ParseDigest(hex)
		if err != nil {
			return nil, bad(i+4, "%v", err)
		}
		if n := len(s.Packs); n > 0 && bytes.Compare(s.Packs[n-1][:], d[:]) >= 0 {
			return nil, bad(i+4, "packs not sorted or listed twice")
		}
		s.Packs = append(s.Packs, d)
	}
	if !slices.ContainsFunc(s.Packs, func(p storage.Digest) bool { return p == s.Root.Pack }) {
		return nil, bad(2, "the root's pack is not listed")
	}
	if !bytes.Equal(s.encode(), data) {
		return nil, bad(0, "snapshot not in canonical form")
	}
	return s, nil
}

// sortPacks returns the packs of set sorted.
func sortPacks(set map[storage.Digest]struct{}) []storage.Digest {
	out := make([]storage.Digest, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b storage.Digest) int { return bytes.Compare(a[:], b[:]) })
	return out
}

// formatRef is a tree location for errors.
func formatRef(r treeRef) string {
	return r.Digest.String()[:12] + " at " + r.Pack.String()[:12] + "+" + strconv.FormatInt(r.Offset, 10)
}
