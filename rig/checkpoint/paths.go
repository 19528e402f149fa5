package checkpoint

import (
	"path"
	"strings"
	"unicode/utf8"
)

// MaxPathBytes bounds an entry's path and a symlink's target, in bytes
// (Linux's PATH_MAX).
const MaxPathBytes = 4096

// checkPath returns why p is not a valid entry path, or "": slash-separated,
// relative to the workspace root, not the root itself, no empty, "." or ".."
// element, no NUL, at most MaxPathBytes.
func checkPath(p string) string {
	switch {
	case p == "":
		return "empty path"
	case len(p) > MaxPathBytes:
		return "path longer than 4096 bytes"
	case strings.IndexByte(p, 0) >= 0:
		return "path holds a NUL byte"
	case p[0] == '/':
		return "absolute path"
	}
	for _, el := range strings.Split(p, "/") {
		switch el {
		case "":
			return "empty path element"
		case ".", "..":
			return "path element " + el
		}
	}
	return ""
}

// checkTarget returns why a symlink at linkPath with target may not be
// kept, or "" when the link stays inside the workspace. The target is
// resolved lexically relative to the link's directory and must not climb
// out of the root; it must be relative, and any ".." must come before
// every other element ("a/../../x" is refused even when it would stay
// inside): lexical resolution of "l/.." is only right when l is not itself
// a symlink, and a leading run of ".." only climbs through the link's own
// parents, which a valid manifest makes real directories (see validate in
// manifest.go). Each link stays inside on its own, so chains of them do
// too.
func checkTarget(linkPath, target string) string {
	switch {
	case target == "":
		return "empty symlink target"
	case len(target) > MaxPathBytes:
		return "symlink target longer than 4096 bytes"
	case strings.IndexByte(target, 0) >= 0:
		return "symlink target holds a NUL byte"
	case target[0] == '/':
		return "absolute symlink target"
	}
	depth := strings.Count(linkPath, "/") // directories between the root and the link
	named := false
	for _, el := range strings.Split(target, "/") {
		switch el {
		case "", ".":
		case "..":
			if named {
				return "symlink target has .. after a name"
			}
			depth--
			if depth < 0 {
				return "symlink target leads out of the workspace"
			}
		default:
			named = true
		}
	}
	// Defence in depth: the lexical resolution must agree.
	if r := path.Join(path.Dir(linkPath), target); r == ".." || strings.HasPrefix(r, "../") {
		return "symlink target leads out of the workspace"
	}
	return ""
}

// isText reports whether b is shown as text in a diff: valid UTF-8 with no
// NUL byte.
func isText(b []byte) bool {
	return utf8.Valid(b) && !containsNUL(b)
}

func containsNUL(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return true
		}
	}
	return false
}
