package checkpoint

import (
	"fmt"
	"path"
	"strings"
)

// IgnoreFile is the file at a workspace's root whose patterns Take leaves
// out, in gitignore syntax (see Ignore). Only the root's is read.
const IgnoreFile = ".looprigignore"

// Ignore matches workspace paths against gitignore-style patterns. The
// subset understood: blank lines and lines starting with "#" are skipped
// ("\#" and "\!" escape a leading "#" or "!"); trailing unescaped spaces
// are dropped; "!" negates (re-includes what an earlier pattern excluded);
// a trailing "/" matches directories only; a pattern with a "/" at its
// start or middle is anchored at the root (a leading "/" is dropped),
// else it matches the last element at any depth; "*" and "?" match within
// one element, "[...]" a class (path.Match), and "**" as a whole element
// matches any number of elements ("**/x", "a/**/b", "a/**"). The last
// pattern that matches decides. As in git, nothing below an excluded
// directory can be re-included, because the walk does not enter it.
type Ignore struct {
	rules []ignoreRule
}

type ignoreRule struct {
	elems    []string // pattern elements; "**" is the any-depth wildcard
	negate   bool
	dirOnly  bool
	anchored bool // false: match the path's last element only
}

// ParseIgnore compiles patterns, one per element as lines of a
// .looprigignore. A malformed pattern (a bad "[" class) is an error naming
// its line.
func ParseIgnore(lines []string) (*Ignore, error) {
	ig := &Ignore{}
	if err := ig.add(lines, "pattern"); err != nil {
		return nil, err
	}
	return ig, nil
}

func (ig *Ignore) add(lines []string, source string) error {
	for i, line := range lines {
		r, ok, err := parseIgnoreLine(line)
		if err != nil {
			return fmt.Errorf("checkpoint: %s line %d %q: %w", source, i+1, line, err)
		}
		if ok {
			ig.rules = append(ig.rules, r)
		}
	}
	return nil
}

func parseIgnoreLine(line string) (ignoreRule, bool, error) {
	var r ignoreRule
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces go unless escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	if line == "" || line[0] == '#' {
		return r, false, nil
	}
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, "\\!") || strings.HasPrefix(line, "\\#") {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if strings.Contains(line, "/") {
		r.anchored = true
		line = strings.TrimLeft(line, "/")
	}
	if line == "" {
		return r, false, nil
	}
	r.elems = strings.Split(line, "/")
	if !r.anchored && r.elems[0] == "**" {
		r.anchored = true // "**" alone: everything
	}
	for _, el := range r.elems {
		if el == "**" {
			continue
		}
		if _, err := path.Match(el, ""); err != nil {
			return r, false, err
		}
	}
	return r, true, nil
}

// Match reports whether the slash-separated path p (relative to the root)
// is excluded; isDir says whether it names a directory.
func (ig *Ignore) Match(p string, isDir bool) bool {
	if ig == nil {
		return false
	}
	excluded := false
	var elems []string
	for i := range ig.rules {
		r := &ig.rules[i]
		if excluded != r.negate {
			continue // this rule cannot change the outcome
		}
		if r.dirOnly && !isDir {
			continue
		}
		if elems == nil {
			elems = strings.Split(p, "/")
		}
		var ok bool
		if r.anchored {
			ok = matchElems(r.elems, elems)
		} else {
			ok = matchElem(r.elems[0], elems[len(elems)-1])
		}
		if ok {
			excluded = !r.negate
		}
	}
	return excluded
}

// matchElems matches pattern elements against path elements, "**"
// standing for zero or more of them.
func matchElems(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return len(name) > 0 // "a/**" matches what is inside a, not a
			}
			for i := 0; i <= len(name); i++ {
				if matchElems(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 || !matchElem(pat[0], name[0]) {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

func matchElem(pat, name string) bool {
	ok, _ := path.Match(pat, name) // patterns were checked by parseIgnoreLine
	return ok
}
