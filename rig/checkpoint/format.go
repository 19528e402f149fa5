package checkpoint

import (
	"fmt"
	"strings"
)

// Header is the line that opens change c for people, as git's "diff
// --git" line and its mode lines do: "diff PATH (KIND[, details])".
func (c FileChange) Header() string {
	h := "diff " + c.Path + " (" + string(c.Kind)
	switch c.Kind {
	case Added:
		h += fmt.Sprintf(", mode %04o", c.NewMode.Perm())
	case ModeChanged, Modified:
		if c.OldMode != c.NewMode {
			h += fmt.Sprintf(", mode %04o → %04o", c.OldMode.Perm(), c.NewMode.Perm())
		}
	case TypeChanged:
		h += ", " + c.OldKind.String() + " → " + c.NewKind.String()
	}
	if c.NewTarget != "" && c.NewTarget != c.OldTarget {
		h += ", link to " + c.NewTarget
	}
	return h + ")"
}

// Format is changes as `looprig diff` prints them and the TUI shows them:
// each change's Header, then its Patch or its Summary. The text is the
// workspace's: a presenter makes it safe to draw.
func Format(changes []FileChange) string {
	var b strings.Builder
	for _, c := range changes {
		b.WriteString(c.Header() + "\n")
		switch {
		case c.Patch != "":
			b.WriteString(c.Patch)
		case c.Summary != "":
			b.WriteString(c.Summary + "\n")
		}
	}
	return b.String()
}
