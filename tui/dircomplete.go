package tui

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// Completing a directory in the create dialog (tab), as a shell does:
// the typed path's last element is extended to the longest prefix the
// directories beside it share, with a "/" when one alone matches. Reading
// the directory is I/O, so it runs in a command, never in Update.

// maxDirEntries bounds how many entries of one directory a completion
// reads: a directory of a million files costs no more than this.
const maxDirEntries = 4096

// maxMatches is how many of the matching directories the dialog shows.
const maxMatches = 8

// dirCompletedMsg is what a tab in the directory field found: the path
// typed, what it completes to (typed when nothing), and, when several
// directories match, their names.
type dirCompletedMsg struct {
	typed, to string
	matches   []string
}

// completeDirCmd completes typed.
func completeDirCmd(typed string) tea.Cmd {
	return func() tea.Msg { return completeDir(typed) }
}

// completeDir completes typed from the directories beside its last
// element (hidden ones only when that begins with a dot).
func completeDir(typed string) dirCompletedMsg {
	out := dirCompletedMsg{typed: typed, to: typed}
	if typed == "~" {
		out.to = "~/"
		return out
	}
	path := expandHome(typed)
	parent, prefix := filepath.Split(path)
	if parent == "" {
		parent = "."
	}
	f, err := os.Open(parent)
	if err != nil {
		return out
	}
	defer f.Close()
	entries, _ := f.ReadDir(maxDirEntries)
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, prefix) || strings.HasPrefix(n, ".") && !strings.HasPrefix(prefix, ".") {
			continue
		}
		if e.IsDir() || e.Type()&os.ModeSymlink != 0 && isDir(filepath.Join(parent, n)) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return out
	}
	sort.Strings(names)
	common := names[0]
	for _, n := range names[1:] {
		for !strings.HasPrefix(n, common) {
			common = common[:len(common)-1]
		}
	}
	// Complete what was typed, keeping how it was typed (a ~ stays).
	to := typed[:len(typed)-len(prefix)] + common
	if len(names) == 1 {
		to += string(filepath.Separator)
	} else {
		out.matches = names[:min(len(names), maxMatches)]
	}
	out.to = to
	return out
}

// isDir says whether path is a directory (following links).
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// expandHome expands a leading "~/" (or a lone "~") to the home
// directory, as a shell would before passing the path on.
func expandHome(path string) string {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return path
	}
	return filepath.Join(home, strings.TrimPrefix(path, "~"))
}
