package tui

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"looprig/internal/textsafe"
)

// Text helpers. Everything drawn is built from plain, sanitized text whose
// width is known, then painted with cached SGR prefixes (styles.go). None
// of these functions sees escape sequences of its own making; the one
// exception, turn output with its own SGR, is drawn by fitStyled
// (output.go).

// clean makes untrusted one-line text (a title, a path, an error cause)
// safe to draw: controls, escape sequences and bidi controls are shown as
// inert text.
func clean(s string) string { return textsafe.Line(s) }

// width is the display width of plain text.
func width(s string) int {
	if isASCII(s) {
		return len(s)
	}
	return ansi.StringWidth(s)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// fit returns plain text s cut or padded to exactly w cells. Cut text ends
// with "…".
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	// Fast path: ASCII prefix long enough to decide.
	n := min(len(s), w+1)
	if isASCII(s[:n]) {
		if len(s) <= w {
			return s + spaces(w-len(s))
		}
		if isASCII(s[:w]) && len(s) > w {
			return s[:w-1] + "…"
		}
	}
	sw := ansi.StringWidth(s)
	if sw <= w {
		return s + spaces(w-sw)
	}
	t := ansi.Truncate(s, w, "…")
	return t + spaces(w-ansi.StringWidth(t))
}

// trunc cuts plain text s to at most w cells, without padding.
func trunc(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if len(s) <= w && isASCII(s) {
		return s
	}
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// truncLeft keeps the end of s (a path) within w cells.
func truncLeft(s string, w int) string {
	sw := width(s)
	if sw <= w {
		return s
	}
	if w <= 1 {
		return trunc("…", w)
	}
	return "…" + ansi.TruncateLeft(s, sw-w+1, "")
}

var spaceCache = strings.Repeat(" ", 512)

func spaces(n int) string {
	if n <= 0 {
		return ""
	}
	if n <= len(spaceCache) {
		return spaceCache[:n]
	}
	return strings.Repeat(" ", n)
}

// padLeft right-aligns s in w cells.
func padLeft(s string, w int) string {
	sw := width(s)
	if sw >= w {
		return trunc(s, w)
	}
	return spaces(w-sw) + s
}

// ago is a short relative age: "5s", "3m", "2h", "4d", "-" for zero.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "now"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

// dur is a compact duration: "850ms", "12.3s", "4m05s", "2h03m".
func dur(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.Itoa(int(d/time.Millisecond)) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m" + pad2(int(d%time.Minute/time.Second)) + "s"
	}
	return strconv.Itoa(int(d/time.Hour)) + "h" + pad2(int(d%time.Hour/time.Minute)) + "m"
}

func pad2(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// commas formats n with thousands separators.
func commas(n uint64) string {
	s := strconv.FormatUint(n, 10)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// causeChain splits an error into its layers, outermost first, each
// without the text of the layers below it: "restore session X:
// lease_failed: lease … is held" becomes ["restore session X:
// lease_failed", "lease … is held"]. Joined errors contribute each branch.
func causeChain(err error) []string {
	var out []string
	for err != nil && len(out) < 8 {
		msg := err.Error()
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				out = append(out, causeChain(e)...)
			}
			return out
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		}
		if next != nil {
			inner := next.Error()
			if trimmed, ok := strings.CutSuffix(msg, ": "+inner); ok {
				msg = trimmed
			} else if strings.Contains(msg, inner) {
				msg = strings.TrimSpace(strings.Replace(msg, inner, "…", 1))
			}
		}
		if msg != "" && msg != "…" {
			out = append(out, clean(msg))
		}
		err = next
	}
	return out
}

// errText is one sanitized line describing err.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return clean(err.Error())
}

// wrapText wraps plain text to lines of at most w cells: at spaces when it
// can, hard otherwise.
func wrapText(s string, w int) []string {
	if width(s) <= w {
		return []string{s}
	}
	out := strings.Split(ansi.Hardwrap(ansi.Wordwrap(s, w, ""), w, true), "\n")
	for i := range out {
		out[i] = strings.TrimRight(out[i], " ")
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// agoText is ago as words: "5m ago", or "now" and "-" as they are.
func agoText(now, t time.Time) string {
	a := ago(now, t)
	if a == "-" || a == "now" {
		return a
	}
	return a + " ago"
}
