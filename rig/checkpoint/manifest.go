package checkpoint

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"looprig/rig/storage"
)

// Limits on a decoded manifest, against hostile or damaged input.
const (
	MaxEntries       = 1 << 20   // entries in one manifest
	MaxManifestBytes = 256 << 20 // bytes of an encoded manifest
	maxLineBytes     = 4*2*MaxPathBytes + 256
)

// manifestHeader is the first line of every encoded manifest; the number
// is the format's version.
const manifestHeader = "looprig-checkpoint 1"

// Kind is an entry's type.
type Kind uint8

// The kinds of entries a manifest holds.
const (
	File    Kind = iota + 1 // a regular file
	Symlink                 // a symbolic link leading inside the workspace
	Dir                     // an empty directory
)

func (k Kind) String() string {
	switch k {
	case File:
		return "file"
	case Symlink:
		return "symlink"
	case Dir:
		return "dir"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Entry is one path of a manifest.
type Entry struct {
	Path   string         // slash-separated, relative to the workspace root
	Kind   Kind           //
	Mode   fs.FileMode    // File and Dir: permission bits (within 0777)
	Size   int64          // File: bytes
	Digest storage.Digest // File: the digest of its content
	Target string         // Symlink: the target, exactly as read
	// Chunks says where a File's content is (none when it is empty). A
	// version 1 manifest's file is one chunk: its own blob, whole.
	Chunks []Chunk
}

// Manifest is a checkpoint read whole: the entries of a workspace, sorted
// by path (byte order), each path once. Directories that hold something
// are implied by their entries' paths; only empty ones are entries.
// Version 2 checkpoints (trees, see tree.go) also give every directory's
// mode and the paths a rule left out.
type Manifest struct {
	Version  int // 1: a flat manifest; 2: a snapshot of trees
	Entries  []Entry
	RootMode fs.FileMode            // version 2
	Dirs     map[string]fs.FileMode // version 2: every directory below the root, by path
	Excluded []ExcludedPath         // version 2: sorted by path
}

// NewManifest sorts entries by path and returns them as a manifest, or a
// *ManifestError when they do not form a valid one.
func NewManifest(entries []Entry) (*Manifest, error) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	m := &Manifest{Version: 1, Entries: entries}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// Validate checks what Decode checks of a decoded manifest: at most
// MaxEntries entries, sorted, each path valid (checkPath) and once, no
// path below another entry (through a file, a symlink or an "empty"
// directory), modes within 0777, sizes not negative, symlinks leading
// inside (checkTarget).
func (m *Manifest) Validate() error {
	if len(m.Entries) > MaxEntries {
		return &ManifestError{Reason: fmt.Sprintf("%d entries, more than %d", len(m.Entries), MaxEntries)}
	}
	seen := make(map[string]struct{}, len(m.Entries))
	for i := range m.Entries {
		if err := validateEntry(m.Entries, i, seen); err != nil {
			return &ManifestError{Line: i + 2, Reason: err.Error()}
		}
	}
	return nil
}

// validateEntry checks entries[i] given the ones before it, whose paths
// are in seen; it adds entries[i]'s.
func validateEntry(entries []Entry, i int, seen map[string]struct{}) error {
	e := &entries[i]
	if r := checkPath(e.Path); r != "" {
		return fmt.Errorf("%q: %s", e.Path, r)
	}
	if i > 0 {
		switch prev := entries[i-1].Path; {
		case prev == e.Path:
			return fmt.Errorf("%q: duplicate path", e.Path)
		case prev > e.Path:
			return fmt.Errorf("%q: not sorted (after %q)", e.Path, prev)
		}
	}
	for j := 0; j < len(e.Path); j++ {
		if e.Path[j] == '/' {
			if _, ok := seen[e.Path[:j]]; ok {
				return fmt.Errorf("%q: below the entry %q", e.Path, e.Path[:j])
			}
		}
	}
	switch e.Kind {
	case File:
		if e.Size < 0 {
			return fmt.Errorf("%q: negative size", e.Path)
		}
		if e.Mode&^0o777 != 0 {
			return fmt.Errorf("%q: mode %o beyond 0777", e.Path, uint32(e.Mode))
		}
	case Dir:
		if e.Mode&^0o777 != 0 {
			return fmt.Errorf("%q: mode %o beyond 0777", e.Path, uint32(e.Mode))
		}
	case Symlink:
		if r := checkTarget(e.Path, e.Target); r != "" {
			return fmt.Errorf("%q -> %q: %s", e.Path, e.Target, r)
		}
	default:
		return fmt.Errorf("%q: unknown kind %d", e.Path, e.Kind)
	}
	seen[e.Path] = struct{}{}
	return nil
}

// Encode returns the manifest's canonical encoding: a header line, then
// one line per entry, in order:
//
//	f <mode, 4 octal digits> <size> <digest hex> <path, Go-quoted>
//	l <path, Go-quoted> <target, Go-quoted>
//	d <mode, 4 octal digits> <path, Go-quoted>
//
// The same tree gives the same bytes.
func (m *Manifest) Encode() []byte {
	var b bytes.Buffer
	b.WriteString(manifestHeader)
	b.WriteByte('\n')
	for i := range m.Entries {
		b.Write(appendEntry(nil, &m.Entries[i]))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func appendEntry(b []byte, e *Entry) []byte {
	switch e.Kind {
	case File:
		b = fmt.Appendf(b, "f %04o %d %s ", uint32(e.Mode), e.Size, e.Digest)
		b = strconv.AppendQuote(b, e.Path)
	case Symlink:
		b = append(b, "l "...)
		b = strconv.AppendQuote(b, e.Path)
		b = append(b, ' ')
		b = strconv.AppendQuote(b, e.Target)
	case Dir:
		b = fmt.Appendf(b, "d %04o ", uint32(e.Mode))
		b = strconv.AppendQuote(b, e.Path)
	default:
		b = fmt.Appendf(b, "? %d", e.Kind)
	}
	return b
}

// Digest is the digest of the manifest's encoding: the name of its blob.
func (m *Manifest) Digest() storage.Digest { return storage.DigestOf(m.Encode()) }

// Lookup returns the entry at path p.
func (m *Manifest) Lookup(p string) (Entry, bool) {
	i := sort.Search(len(m.Entries), func(i int) bool { return m.Entries[i].Path >= p })
	if i < len(m.Entries) && m.Entries[i].Path == p {
		return m.Entries[i], true
	}
	return Entry{}, false
}

// Size is the total size of the manifest's files.
func (m *Manifest) Size() int64 {
	var n int64
	for i := range m.Entries {
		n += m.Entries[i].Size
	}
	return n
}

// Decode reads an encoded manifest. It is strict: anything but the
// canonical encoding of a valid manifest (see Encode and Validate) is a
// *ManifestError, as is more than MaxManifestBytes or MaxEntries; an error
// of r is returned wrapped in one.
func Decode(r io.Reader) (*Manifest, error) {
	lr := &io.LimitedReader{R: r, N: MaxManifestBytes + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	sc.Split(splitStrictLines)
	m := &Manifest{Version: 1}
	seen := make(map[string]struct{})
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			if text != manifestHeader {
				return nil, &ManifestError{Line: 1, Reason: fmt.Sprintf("header %.40q, want %q", text, manifestHeader)}
			}
			continue
		}
		if len(m.Entries) == MaxEntries {
			return nil, &ManifestError{Line: line, Reason: fmt.Sprintf("more than %d entries", MaxEntries)}
		}
		e, err := parseEntry(text)
		if err != nil {
			return nil, &ManifestError{Line: line, Reason: err.Error()}
		}
		m.Entries = append(m.Entries, e)
		if err := validateEntry(m.Entries, len(m.Entries)-1, seen); err != nil {
			return nil, &ManifestError{Line: line, Reason: err.Error()}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &ManifestError{Line: line + 1, Reason: "line too long"}
		}
		var me *ManifestError
		if errors.As(err, &me) {
			me.Line = line + 1
			return nil, me
		}
		return nil, &ManifestError{Line: line + 1, Reason: "read", Err: err}
	}
	if lr.N <= 0 {
		return nil, &ManifestError{Reason: fmt.Sprintf("more than %d bytes", MaxManifestBytes)}
	}
	if line == 0 {
		return nil, &ManifestError{Reason: "empty"}
	}
	for i := range m.Entries {
		if e := &m.Entries[i]; e.Kind == File && e.Size > 0 {
			e.Chunks = []Chunk{{Digest: e.Digest, Pack: e.Digest, Length: e.Size}}
		}
	}
	return m, nil
}

// splitStrictLines is bufio.ScanLines without its leniency: lines end in
// "\n" alone ("\r" stays in the line), and so must the last one.
func splitStrictLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return 0, nil, &ManifestError{Reason: "last line does not end in a newline"}
	}
	return 0, nil, nil
}

// parseEntry parses one entry line and checks it is canonical.
func parseEntry(line string) (Entry, error) {
	var e Entry
	kind, rest, _ := strings.Cut(line, " ")
	var err error
	switch kind {
	case "f":
		e.Kind = File
		var mode, size, digest string
		mode, rest, _ = strings.Cut(rest, " ")
		size, rest, _ = strings.Cut(rest, " ")
		digest, rest, _ = strings.Cut(rest, " ")
		if e.Mode, err = parseMode(mode); err != nil {
			return e, err
		}
		if e.Size, err = strconv.ParseInt(size, 10, 64); err != nil {
			return e, fmt.Errorf("size %.30q: not a number", size)
		}
		if e.Digest, err = storage.ParseDigest(digest); err != nil {
			return e, err
		}
		if e.Path, err = strconv.Unquote(rest); err != nil {
			return e, fmt.Errorf("path %.60s: not a quoted string", rest)
		}
	case "d":
		e.Kind = Dir
		var mode string
		mode, rest, _ = strings.Cut(rest, " ")
		if e.Mode, err = parseMode(mode); err != nil {
			return e, err
		}
		if e.Path, err = strconv.Unquote(rest); err != nil {
			return e, fmt.Errorf("path %.60s: not a quoted string", rest)
		}
	case "l":
		e.Kind = Symlink
		qp, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return e, fmt.Errorf("path %.60s: not a quoted string", rest)
		}
		e.Path, _ = strconv.Unquote(qp)
		rest = strings.TrimPrefix(rest[len(qp):], " ")
		if e.Target, err = strconv.Unquote(rest); err != nil {
			return e, fmt.Errorf("target %.60s: not a quoted string", rest)
		}
	default:
		return e, fmt.Errorf("unknown entry type %.10q", kind)
	}
	if string(appendEntry(nil, &e)) != line {
		return e, errors.New("entry not in canonical form")
	}
	return e, nil
}

func parseMode(s string) (fs.FileMode, error) {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || len(s) != 4 {
		return 0, fmt.Errorf("mode %.10q: want 4 octal digits", s)
	}
	return fs.FileMode(v), nil
}
