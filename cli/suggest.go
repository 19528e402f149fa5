package cli

import "fmt"

// unknownCommand is the usage error for a subcommand that does not exist,
// naming the closest one when a typo explains it ("stpo" for "stop").
func unknownCommand(name string) *UsageError {
	msg := fmt.Sprintf("unknown command %q", name)
	if s := suggestCommand(name); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return &UsageError{Msg: msg, Hint: "run 'looprig --help' for the list of commands"}
}

// maxSuggestDistance is how many edits a typo may be from a command for
// that command to be suggested.
const maxSuggestDistance = 2

// suggestCommand returns the command name closest to name, within
// maxSuggestDistance edits (and fewer edits than name has letters, so
// "x" suggests nothing), "" when there is none; of two as close, the
// first in the list.
func suggestCommand(name string) string {
	best, bestD := "", maxSuggestDistance+1
	for _, c := range commands {
		if d := editDistance(name, c.name); d < bestD && d < len([]rune(name)) {
			best, bestD = c.name, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b
// (Damerau-Levenshtein without edits of a substring twice): insertions,
// deletions, substitutions and swaps of two adjacent letters count one.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	// d[i][j]: the distance between s[:i] and t[:j].
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}
