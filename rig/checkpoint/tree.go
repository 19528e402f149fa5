package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"looprig/rig/storage"
)

// A tree is one directory of a checkpoint: its entries sorted by name,
// encoded as text, one line per entry (a file of several chunks is
// followed by a line per chunk):
//
//	looprig-tree 1
//	d <mode> <tree digest> <pack|-> <offset> <length> <name>   a directory
//	e <mode> <name>                                            an empty file
//	f <mode> <size> <digest> <pack> <offset> <name>            a file in one chunk
//	F <mode> <size> <digest> <chunks> <name>                   a file in several
//	c <chunk digest> <pack> <offset> <length>                  one of them
//	l <name> <target>                                          a symlink
//	x <f|d> <name>                                             left out (secret, ignored)
//
// Modes are 4 octal digits, names and targets Go-quoted, digests 64 hex.
// A directory's tree is named by the digest of its encoding and found at
// <length> bytes at <offset> of pack <pack>, where "-" is the pack that
// holds the tree naming it: a checkpoint's new trees are put in one pack,
// children before parents, and a parent cannot know that pack's digest.
// The encoding is canonical: the same entries and locations give the same
// bytes, and decoding refuses anything else.
const treeHeader = "looprig-tree 1"

// Limits on a decoded tree, against hostile or damaged input.
const (
	maxTreeBytes  = 256 << 20
	maxNameBytes  = 255
	emptyDigestHx = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// emptyDigest is the digest of no bytes: every empty file's.
var emptyDigest, _ = storage.ParseDigest(emptyDigestHx)

// treeRef locates a directory's tree.
type treeRef struct {
	Digest   storage.Digest // of the tree's encoding
	Pack     storage.Digest // zero with SamePack
	SamePack bool           // in the pack of the tree that names it
	Offset   int64
	Length   int64
}

// resolve returns r with SamePack replaced by pack.
func (r treeRef) resolve(pack storage.Digest) treeRef {
	if r.SamePack {
		r.Pack, r.SamePack = pack, false
	}
	return r
}

// treeEntry is one entry of a tree.
type treeEntry struct {
	Name     string
	Kind     Kind // File, Symlink or Dir
	Excluded bool // left out: only Name and Kind (File or Dir) are set
	Mode     fs.FileMode
	Size     int64
	Digest   storage.Digest // File: its content
	Chunks   []Chunk        // File: where its content is (none when empty)
	Tree     treeRef        // Dir
	Target   string         // Symlink
}

// encodeTree returns the canonical encoding of entries, which must be
// sorted by name.
func encodeTree(entries []treeEntry) []byte {
	var b bytes.Buffer
	b.WriteString(treeHeader)
	b.WriteByte('\n')
	var line []byte
	for i := range entries {
		line = appendTreeEntry(line[:0], &entries[i])
		b.Write(line)
	}
	return b.Bytes()
}

// appendTreeEntry appends e's lines, each ending in "\n".
func appendTreeEntry(b []byte, e *treeEntry) []byte {
	if e.Excluded {
		k := byte('f')
		if e.Kind == Dir {
			k = 'd'
		}
		b = append(b, 'x', ' ', k, ' ')
		b = strconv.AppendQuote(b, e.Name)
		return append(b, '\n')
	}
	switch e.Kind {
	case Dir:
		b = append(b, "d "...)
		b = appendMode(b, e.Mode)
		b = append(b, ' ')
		b = appendHex(b, e.Tree.Digest)
		b = append(b, ' ')
		if e.Tree.SamePack {
			b = append(b, '-')
		} else {
			b = appendHex(b, e.Tree.Pack)
		}
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.Tree.Offset, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.Tree.Length, 10)
	case File:
		switch len(e.Chunks) {
		case 0:
			b = append(b, "e "...)
			b = appendMode(b, e.Mode)
		case 1:
			b = appendFileHead(b, "f ", e)
			b = append(b, ' ')
			b = appendHex(b, e.Chunks[0].Pack)
			b = append(b, ' ')
			b = strconv.AppendInt(b, e.Chunks[0].Offset, 10)
		default:
			b = appendFileHead(b, "F ", e)
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(len(e.Chunks)), 10)
		}
	case Symlink:
		b = append(b, "l "...)
		b = strconv.AppendQuote(b, e.Name)
		b = append(b, ' ')
		b = strconv.AppendQuote(b, e.Target)
		return append(b, '\n')
	}
	b = append(b, ' ')
	b = strconv.AppendQuote(b, e.Name)
	b = append(b, '\n')
	if e.Kind == File && len(e.Chunks) > 1 {
		for _, c := range e.Chunks {
			b = append(b, "c "...)
			b = appendHex(b, c.Digest)
			b = append(b, ' ')
			b = appendHex(b, c.Pack)
			b = append(b, ' ')
			b = strconv.AppendInt(b, c.Offset, 10)
			b = append(b, ' ')
			b = strconv.AppendInt(b, c.Length, 10)
			b = append(b, '\n')
		}
	}
	return b
}

// appendFileHead appends tag and the fields an "f" and an "F" line begin
// with: e's mode, size and digest.
func appendFileHead(b []byte, tag string, e *treeEntry) []byte {
	b = append(b, tag...)
	b = appendMode(b, e.Mode)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.Size, 10)
	b = append(b, ' ')
	b = appendHex(b, e.Digest)
	return b
}

func appendMode(b []byte, m fs.FileMode) []byte {
	s := strconv.FormatUint(uint64(m.Perm()), 8)
	for i := len(s); i < 4; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

const hexDigits = "0123456789abcdef"

func appendHex(b []byte, d storage.Digest) []byte {
	for _, c := range d {
		b = append(b, hexDigits[c>>4], hexDigits[c&15])
	}
	return b
}

// decodeTree parses an encoded tree strictly (see treeHeader): anything
// but the canonical encoding of valid entries is a *ManifestError.
func decodeTree(data []byte) ([]treeEntry, error) {
	if len(data) > maxTreeBytes {
		return nil, &ManifestError{Reason: fmt.Sprintf("tree of %d bytes, more than %d", len(data), maxTreeBytes)}
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) < 2 || lines[len(lines)-1] != "" {
		return nil, &ManifestError{Reason: "tree does not end in a newline"}
	}
	lines = lines[:len(lines)-1]
	if lines[0] != treeHeader {
		return nil, &ManifestError{Line: 1, Reason: fmt.Sprintf("tree header %.40q, want %q", lines[0], treeHeader)}
	}
	var out []treeEntry
	var scratch []byte
	for i := 1; i < len(lines); i++ {
		if len(out) >= MaxEntries {
			return nil, &ManifestError{Line: i + 1, Reason: fmt.Sprintf("more than %d entries", MaxEntries)}
		}
		e, chunks, err := parseTreeLine(lines[i])
		if err != nil {
			return nil, &ManifestError{Line: i + 1, Reason: err.Error()}
		}
		if chunks > 0 {
			if chunks > len(lines)-i-1 {
				return nil, &ManifestError{Line: i + 1, Reason: fmt.Sprintf("%d chunks announced, %d lines left", chunks, len(lines)-i-1)}
			}
			var sum int64
			for k := 0; k < chunks; k++ {
				c, err := parseChunkLine(lines[i+1+k])
				if err != nil {
					return nil, &ManifestError{Line: i + 2 + k, Reason: err.Error()}
				}
				sum += c.Length
				e.Chunks = append(e.Chunks, c)
			}
			if sum != e.Size {
				return nil, &ManifestError{Line: i + 1, Reason: fmt.Sprintf("%q: chunks hold %d bytes, the file %d", e.Name, sum, e.Size)}
			}
		}
		scratch = appendTreeEntry(scratch[:0], &e)
		var want strings.Builder
		for k := 0; k <= chunks; k++ {
			want.WriteString(lines[i+k])
			want.WriteByte('\n')
		}
		if string(scratch) != want.String() {
			return nil, &ManifestError{Line: i + 1, Reason: "entry not in canonical form"}
		}
		if n := len(out); n > 0 && out[n-1].Name >= e.Name {
			reason := "not sorted"
			if out[n-1].Name == e.Name {
				reason = "duplicate name"
			}
			return nil, &ManifestError{Line: i + 1, Reason: fmt.Sprintf("%q: %s", e.Name, reason)}
		}
		out = append(out, e)
		i += chunks
	}
	return out, nil
}

// fileHead sets e.Kind to File and e.Mode and e.Size from f[0] and f[1],
// the fields an "f" and an "F" line begin with.
func (e *treeEntry) fileHead(f []string) (err error) {
	e.Kind = File
	if e.Mode, err = parseMode(f[0]); err != nil {
		return err
	}
	e.Size, err = parseCount(f[1])
	return err
}

// parseTreeLine parses one entry line (not a chunk line); chunks is how
// many chunk lines follow it.
func parseTreeLine(line string) (e treeEntry, chunks int, err error) {
	tag, rest, _ := strings.Cut(line, " ")
	var f []string
	switch tag {
	case "d":
		f, rest = fields(rest, 5)
		e.Kind = Dir
		if e.Mode, err = parseMode(f[0]); err != nil {
			return e, 0, err
		}
		if e.Tree.Digest, err = storage.ParseDigest(f[1]); err != nil {
			return e, 0, err
		}
		if f[2] == "-" {
			e.Tree.SamePack = true
		} else if e.Tree.Pack, err = storage.ParseDigest(f[2]); err != nil {
			return e, 0, err
		}
		if e.Tree.Offset, err = parseCount(f[3]); err != nil {
			return e, 0, err
		}
		if e.Tree.Length, err = parseCount(f[4]); err != nil {
			return e, 0, err
		}
	case "e":
		f, rest = fields(rest, 1)
		e.Kind, e.Digest = File, emptyDigest
		if e.Mode, err = parseMode(f[0]); err != nil {
			return e, 0, err
		}
	case "f":
		f, rest = fields(rest, 5)
		if err = e.fileHead(f); err != nil {
			return e, 0, err
		}
		if e.Size == 0 {
			return e, 0, errors.New("a one-chunk file of 0 bytes (an empty file is \"e\")")
		}
		if e.Digest, err = storage.ParseDigest(f[2]); err != nil {
			return e, 0, err
		}
		c := Chunk{Digest: e.Digest, Length: e.Size}
		if c.Pack, err = storage.ParseDigest(f[3]); err != nil {
			return e, 0, err
		}
		if c.Offset, err = parseCount(f[4]); err != nil {
			return e, 0, err
		}
		e.Chunks = []Chunk{c}
	case "F":
		f, rest = fields(rest, 4)
		if err = e.fileHead(f); err != nil {
			return e, 0, err
		}
		if e.Digest, err = storage.ParseDigest(f[2]); err != nil {
			return e, 0, err
		}
		n, err := parseCount(f[3])
		if err != nil {
			return e, 0, err
		}
		if n < 2 || n > maxChunksPerFile {
			return e, 0, fmt.Errorf("%d chunks: want 2 to %d", n, maxChunksPerFile)
		}
		chunks = int(n)
	case "l":
		e.Kind = Symlink
		qp, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return e, 0, fmt.Errorf("name %.60s: not a quoted string", rest)
		}
		e.Name, _ = strconv.Unquote(qp)
		if e.Target, err = strconv.Unquote(strings.TrimPrefix(rest[len(qp):], " ")); err != nil {
			return e, 0, fmt.Errorf("target %.60s: not a quoted string", rest[len(qp):])
		}
		if err := checkName(e.Name); err != nil {
			return e, 0, err
		}
		return e, 0, nil
	case "x":
		f, rest = fields(rest, 1)
		switch f[0] {
		case "f":
			e.Kind = File
		case "d":
			e.Kind = Dir
		default:
			return e, 0, fmt.Errorf("excluded entry of kind %.10q", f[0])
		}
		e.Excluded = true
	default:
		return e, 0, fmt.Errorf("unknown entry type %.10q", tag)
	}
	if e.Name, err = strconv.Unquote(rest); err != nil {
		return e, 0, fmt.Errorf("name %.60s: not a quoted string", rest)
	}
	return e, chunks, checkName(e.Name)
}

func parseChunkLine(line string) (Chunk, error) {
	var c Chunk
	tag, rest, _ := strings.Cut(line, " ")
	if tag != "c" {
		return c, fmt.Errorf("want a chunk line, got type %.10q", tag)
	}
	f, rest := fields(rest, 4)
	if rest != "" {
		return c, errors.New("chunk line: extra fields")
	}
	var err error
	if c.Digest, err = storage.ParseDigest(f[0]); err != nil {
		return c, err
	}
	if c.Pack, err = storage.ParseDigest(f[1]); err != nil {
		return c, err
	}
	if c.Offset, err = parseCount(f[2]); err != nil {
		return c, err
	}
	if c.Length, err = parseCount(f[3]); err != nil {
		return c, err
	}
	if c.Length == 0 {
		return c, errors.New("chunk of 0 bytes")
	}
	return c, nil
}

// fields cuts n space-separated fields off s; missing ones are "".
func fields(s string, n int) ([]string, string) {
	f := make([]string, n)
	for i := range f {
		f[i], s, _ = strings.Cut(s, " ")
	}
	return f, s
}

// parseCount parses a decimal count or offset (0 or more, canonical: the
// canonical re-encoding catches leading zeros and signs).
func parseCount(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%.30q: not a count", s)
	}
	return v, nil
}

// checkName reports why name cannot be a directory entry's name.
func checkName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("entry name %q", name)
	case len(name) > maxNameBytes:
		return fmt.Errorf("entry name longer than %d bytes", maxNameBytes)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("entry name %q holds a slash or a NUL", name)
	}
	return nil
}
