package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"looprig/rig/storage"
)

var hx = storage.DigestOf([]byte("x")).String()

func TestDecodeRoundTrip(t *testing.T) {
	m, err := NewManifest([]Entry{
		{Path: "z", Kind: Dir, Mode: 0o700},
		{Path: "a b/\"q\"\n\xff", Kind: File, Mode: 0o755, Size: 1, Digest: storage.DigestOf([]byte("x"))},
		{Path: "a b/l", Kind: Symlink, Target: "../z"},
		{Path: "a.txt", Kind: File, Mode: 0o644, Size: 0, Digest: storage.DigestOf(nil)},
	})
	if err != nil {
		t.Fatal(err)
	}
	enc := m.Encode()
	got, err := Decode(bytes.NewReader(enc))
	if err != nil {
		t.Fatalf("%v\n%s", err, enc)
	}
	if !bytes.Equal(got.Encode(), enc) || got.Digest() != m.Digest() {
		t.Fatalf("round trip changed the encoding:\n%s\n%s", enc, got.Encode())
	}
	if e, ok := got.Lookup("a b/l"); !ok || e.Target != "../z" {
		t.Errorf("Lookup = %v, %v", e, ok)
	}
}

func TestDecodeRejectsHostile(t *testing.T) {
	h := manifestHeader + "\n"
	f := func(path string) string { return fmt.Sprintf("f 0644 1 %s %q\n", hx, path) }
	for name, enc := range map[string]string{
		"empty":             "",
		"no header":         f("a"),
		"other version":     "looprig-checkpoint 2\n",
		"no final newline":  h + strings.TrimSuffix(f("a"), "\n"),
		"crlf":              h + strings.TrimSuffix(f("a"), "\n") + "\r\n",
		"dotdot":            h + f("../etc/passwd"),
		"dotdot inside":     h + f("a/../../b"),
		"absolute":          h + f("/etc/passwd"),
		"dot":               h + f("a/./b"),
		"root":              h + f("."),
		"empty element":     h + f("a//b"),
		"trailing slash":    h + f("a/"),
		"empty path":        h + f(""),
		"nul":               h + f("a\x00b"),
		"long path":         h + f(strings.Repeat("a", MaxPathBytes+1)),
		"duplicate":         h + f("a") + f("a"),
		"unsorted":          h + f("b") + f("a"),
		"through symlink":   h + "l \"d\" \"real\"\n" + f("d/x") + f("real"),
		"through file":      h + f("a") + f("a/b"),
		"below empty dir":   h + "d 0755 \"a\"\n" + f("a/b"),
		"symlink abs":       h + "l \"l\" \"/etc\"\n",
		"symlink out":       h + "l \"a/l\" \"../../x\"\n",
		"symlink sneaky":    h + "l \"a/l\" \"b/../../..\"\n",
		"symlink chain":     h + "l \"a/l\" \"..\"\n" + "l \"a/m\" \"l/..\"\n",
		"symlink empty":     h + "l \"l\" \"\"\n",
		"setuid":            h + fmt.Sprintf("f 4755 1 %s \"a\"\n", hx),
		"mode not 4 digits": h + fmt.Sprintf("f 644 1 %s \"a\"\n", hx),
		"negative size":     h + fmt.Sprintf("f 0644 -1 %s \"a\"\n", hx),
		"size +1":           h + fmt.Sprintf("f 0644 +1 %s \"a\"\n", hx),
		"upper hex":         h + fmt.Sprintf("f 0644 1 %s \"a\"\n", strings.ToUpper(hx)),
		"unquoted":          h + fmt.Sprintf("f 0644 1 %s a\n", hx),
		"non-canonical":     h + fmt.Sprintf("f 0644 1 %s \"\\x61\"\n", hx),
		"two spaces":        h + fmt.Sprintf("f 0644 1  %s \"a\"\n", hx),
		"trailing junk":     h + fmt.Sprintf("f 0644 1 %s \"a\" x\n", hx),
		"unknown type":      h + "p \"fifo\"\n",
		"long line":         h + "d 0755 \"" + strings.Repeat("\\x00", maxLineBytes) + "\"\n",
	} {
		_, err := Decode(strings.NewReader(enc))
		var me *ManifestError
		if !errors.As(err, &me) {
			t.Errorf("%s: Decode = %v, want *ManifestError", name, err)
		}
	}
}

// entryLines yields a header and then n "d" entries, without holding them.
type entryLines struct {
	n, i int
	buf  []byte
}

func (r *entryLines) Read(p []byte) (int, error) {
	for len(r.buf) < len(p) && r.i <= r.n {
		if r.i == 0 {
			r.buf = append(r.buf, manifestHeader+"\n"...)
		} else {
			r.buf = fmt.Appendf(r.buf, "d 0755 \"%08d\"\n", r.i)
		}
		r.i++
	}
	if len(r.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func TestDecodeRejectsTooManyEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes a million entries")
	}
	_, err := Decode(&entryLines{n: MaxEntries + 1})
	var me *ManifestError
	if !errors.As(err, &me) || !strings.Contains(me.Reason, "entries") {
		t.Fatalf("Decode of %d entries = %v, want *ManifestError", MaxEntries+1, err)
	}
}

func TestCheckTarget(t *testing.T) {
	for _, tc := range []struct {
		link, target string
		ok           bool
	}{
		{"l", "a", true},
		{"l", "a/b/../c", false}, // ".." after a name: refused, see checkTarget
		{"l", "..", false},
		{"a/l", "..", true},
		{"a/l", "../..", false},
		{"a/b/l", "../../x", true},
		{"a/b/l", "./../../x", true},
		{"l", "/abs", false},
		{"l", ".", true},
		{"x/y/l", "a/../b", false},
		{"x/y/l", "../a", true},
	} {
		if got := checkTarget(tc.link, tc.target) == ""; got != tc.ok {
			t.Errorf("%s -> %s: inside = %v, want %v", tc.link, tc.target, got, tc.ok)
		}
	}
}
