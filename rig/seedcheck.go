package rig

import (
	"os"
	"path/filepath"
	"strings"
)

// maxLinkHops is the kernel's limit on symlinks followed in one lookup;
// past it a lookup fails (ELOOP) instead of resolving anywhere.
const maxLinkHops = 40

// linkStaysInside reports whether a relative symlink with target link,
// in the seed directory dir (relative to root), resolves inside root when
// followed the way the kernel follows it: one component at a time, through
// every symlink met on the way that exists in the seed. A lexical check
// alone is fooled by ".." after a symlink: with sub/up -> "..", the target
// "sub/up/../.." cleans to the seed but resolves to its parent. The copy of
// the seed has the same structure, so a link that stays inside the seed
// stays inside the workspace. Components that do not exist are taken
// lexically; a chain too long to resolve (a loop) resolves nowhere.
func linkStaysInside(root, dir, link string) bool {
	var cur []string
	if dir != "." && dir != "" {
		cur = strings.Split(filepath.ToSlash(dir), "/")
	}
	hops := 0
	_, ok := resolveIn(root, cur, link, &hops)
	return ok
}

// resolveIn resolves target from the directory cur (components below
// root) and returns where it ends, or false if it leaves root on the way.
func resolveIn(root string, cur []string, target string, hops *int) ([]string, bool) {
	if filepath.IsAbs(target) {
		return nil, false
	}
	cur = append([]string(nil), cur...)
	for _, comp := range strings.Split(filepath.ToSlash(target), "/") {
		switch comp {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return nil, false
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := append(cur, comp)
		p := filepath.Join(append([]string{root}, next...)...)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			cur = next // a file, a directory, or nothing (yet): lexical
			continue
		}
		*hops++
		if *hops > maxLinkHops {
			return cur, true // ELOOP: resolves nowhere, so not outside
		}
		inner, err := os.Readlink(p)
		if err != nil {
			return nil, false
		}
		res, ok := resolveIn(root, cur, inner, hops)
		if !ok {
			return nil, false
		}
		cur = res
	}
	return cur, true
}
