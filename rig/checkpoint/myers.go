package checkpoint

import (
	"fmt"
	"strings"
)

// edit is one step of a line edit script.
type edit struct {
	op   byte // ' ' keep, '-' delete a[ai], '+' insert b[bi]
	ai   int
	bi   int
	line string
}

// splitLines splits s after each "\n"; the last line may lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lineDiff returns an edit script turning a into b, shortest (Myers' O(ND)
// algorithm) once their common prefix and suffix are set aside, or false
// when it takes more than maxEdits insertions and deletions. Memory is
// O(maxEdits²) at worst.
func lineDiff(a, b []string, maxEdits int) ([]edit, bool) {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var script []edit
	for i := 0; i < pre; i++ {
		script = append(script, edit{op: ' ', ai: i, bi: i, line: a[i]})
	}
	mid, ok := myers(a[pre:len(a)-suf], b[pre:len(b)-suf], maxEdits)
	if !ok {
		return nil, false
	}
	for _, e := range mid {
		e.ai += pre
		e.bi += pre
		script = append(script, e)
	}
	for i := suf; i > 0; i-- {
		ai, bi := len(a)-i, len(b)-i
		script = append(script, edit{op: ' ', ai: ai, bi: bi, line: a[ai]})
	}
	return script, true
}

func myers(a, b []string, maxEdits int) ([]edit, bool) {
	n, m := len(a), len(b)
	maxD := min(maxEdits, n+m)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	// trace[d] holds v[-d..d] as it was after round d.
	var trace [][]int
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
				return backtrack(a, b, trace), true
			}
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
	}
	return nil, false
}

func backtrack(a, b []string, trace [][]int) []edit {
	x, y := len(a), len(b)
	var rev []edit
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1] // v[-(d-1)..d-1]
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, edit{op: ' ', ai: x, bi: y, line: a[x]})
		}
		if x == px {
			y--
			rev = append(rev, edit{op: '+', ai: x, bi: y, line: b[y]})
		} else {
			x--
			rev = append(rev, edit{op: '-', ai: x, bi: y, line: a[x]})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, edit{op: ' ', ai: x, bi: y, line: a[x]})
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// unified formats script as the hunks of a unified diff with ctx lines of
// context, and counts the lines added and removed.
func unified(script []edit, ctx int) (text string, added, removed int) {
	var sb strings.Builder
	var changes []int
	for i, e := range script {
		switch e.op {
		case '+':
			added++
			changes = append(changes, i)
		case '-':
			removed++
			changes = append(changes, i)
		}
	}
	for c := 0; c < len(changes); {
		first, last := changes[c], changes[c]
		c++
		for c < len(changes) && changes[c]-last <= 2*ctx+1 {
			last = changes[c]
			c++
		}
		start, end := max(0, first-ctx), min(len(script), last+ctx+1)
		// An edit's ai and bi count the lines of a and b before it.
		aStart, bStart := script[start].ai, script[start].bi
		var aN, bN int
		for _, e := range script[start:end] {
			if e.op != '+' {
				aN++
			}
			if e.op != '-' {
				bN++
			}
		}
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(aStart, aN), hunkRange(bStart, bN))
		for _, e := range script[start:end] {
			sb.WriteByte(e.op)
			if strings.HasSuffix(e.line, "\n") {
				sb.WriteString(e.line)
			} else {
				sb.WriteString(e.line)
				sb.WriteString("\n\\ No newline at end of file\n")
			}
		}
	}
	return sb.String(), added, removed
}

// hunkRange formats a hunk's range from its 0-based start and count as
// diff -u does: "l" for one line, "l,n" else, and for no line the line
// before it ("l,0").
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
