package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/checkpoint"
)

// diffTimeout bounds a diff: the wait for the checkpoint of a turn that
// just ended, and the blobs' reads.
const diffTimeout = time.Minute

var cmdDiff = &command{
	name: "diff", brief: "show what a turn changed in a session's workspace (from its checkpoints)", help: helpDiff,
	json: true, args: oneID, needs: needsStore, timeout: diffTimeout,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.diffTurn, "turn", "", "the turn: its number (as ls and the TUI show it) or a prefix of its id (default: the last turn)")
		fs.BoolVar(&o.diffStat, "stat", false, "one line per file, lines added and removed")
	},
	run: runDiff,
}

func runDiff(c *call) int {
	id, _, err := c.findExisting(c.args[0])
	if err != nil {
		return c.fail(err)
	}
	tc, err := rig.FindTurnCheckpoints(c.ctx, c.st, id, c.diffTurn)
	if err != nil {
		return c.fail(err)
	}
	changes, err := checkpoint.Diff(c.ctx, c.st, tc.Before, tc.After, checkpoint.DiffOptions{})
	if err != nil {
		return c.fail(fmt.Errorf("diff of turn %d of session %s: %w", tc.Index, rig.ShortID(id.String()), err))
	}
	// What the checkpoint after the turn left out: named, never shown.
	after, err := checkpoint.Load(c.ctx, c.st, tc.After)
	if err != nil {
		return c.fail(fmt.Errorf("diff of turn %d of session %s: %w", tc.Index, rig.ShortID(id.String()), err))
	}
	if c.json {
		out := newDiffJSON(id.String(), tc, changes)
		for _, x := range after.Excluded {
			out.Excluded = append(out.Excluded, excludedPath(x))
		}
		c.writeJSON(out)
		return exitOK
	}
	defer c.printExcluded(after.Excluded)
	if len(changes) == 0 {
		fmt.Fprintf(c.stdout, "turn %d changed nothing in the workspace\n", tc.Index)
		return exitOK
	}
	// Paths, link targets and contents come from the session's workspace:
	// made safe to print (paths before the columns are laid out).
	for i := range changes {
		ch := &changes[i]
		ch.Path, ch.OldTarget, ch.NewTarget = textsafe.Line(ch.Path), textsafe.Line(ch.OldTarget), textsafe.Line(ch.NewTarget)
	}
	if c.diffStat {
		fmt.Fprint(c.stdout, textsafe.Sanitize(checkpoint.FormatStat(changes)))
		return exitOK
	}
	fmt.Fprint(c.stdout, textsafe.Sanitize(checkpoint.Format(changes)))
	return exitOK
}

// maxExcludedShown bounds the excluded paths diff names.
const maxExcludedShown = 20

// excludedPath is x as diff shows it: a directory with a trailing slash.
func excludedPath(x checkpoint.ExcludedPath) string {
	if x.IsDir {
		return x.Path + "/"
	}
	return x.Path
}

// printExcluded names the paths the checkpoint left out (secrets, ignored
// files): kept on the machine they are on, never stored, never shown.
func (c *call) printExcluded(xs []checkpoint.ExcludedPath) {
	if len(xs) == 0 {
		return
	}
	names := make([]string, 0, min(len(xs), maxExcludedShown))
	for _, x := range xs[:min(len(xs), maxExcludedShown)] {
		names = append(names, textsafe.Line(excludedPath(x)))
	}
	more := ""
	if len(xs) > maxExcludedShown {
		more = fmt.Sprintf(" and %d more", len(xs)-maxExcludedShown)
	}
	fmt.Fprintf(c.stdout, " excluded (never stored; see checkpoint_include): %s%s\n", strings.Join(names, ", "), more)
}

// diffJSON is what diff --json prints.
type diffJSON struct {
	ID      string           `json:"id"`
	TurnID  string           `json:"turn_id"`
	Turn    int              `json:"turn"`
	Before  string           `json:"before"` // manifest digest, "" for the empty workspace
	After   string           `json:"after"`
	Changes []diffChangeJSON `json:"changes"`
	// Excluded names what the checkpoint after the turn left out (a
	// directory ends in "/"); their content is never stored.
	Excluded []string `json:"excluded"`
}

type diffChangeJSON struct {
	Path         string `json:"path"`
	Kind         string `json:"kind"`
	OldMode      string `json:"old_mode,omitempty"`
	NewMode      string `json:"new_mode,omitempty"`
	OldSize      int64  `json:"old_size"`
	NewSize      int64  `json:"new_size"`
	Binary       bool   `json:"binary"`
	LinesAdded   int    `json:"lines_added"`
	LinesRemoved int    `json:"lines_removed"`
	Patch        string `json:"patch,omitempty"`
	Summary      string `json:"summary,omitempty"`
}

func newDiffJSON(id string, tc rig.TurnCheckpoints, changes []checkpoint.FileChange) diffJSON {
	out := diffJSON{ID: id, TurnID: tc.TurnID, Turn: tc.Index, After: tc.After.String(), Changes: []diffChangeJSON{}, Excluded: []string{}}
	if !tc.Before.IsZero() {
		out.Before = tc.Before.String()
	}
	mode := func(k checkpoint.Kind, m uint32) string {
		if k == 0 {
			return ""
		}
		return fmt.Sprintf("%04o", m)
	}
	for _, ch := range changes {
		out.Changes = append(out.Changes, diffChangeJSON{
			Path: ch.Path, Kind: string(ch.Kind),
			OldMode: mode(ch.OldKind, uint32(ch.OldMode.Perm())), NewMode: mode(ch.NewKind, uint32(ch.NewMode.Perm())),
			OldSize: ch.OldSize, NewSize: ch.NewSize, Binary: ch.Binary,
			LinesAdded: ch.LinesAdded, LinesRemoved: ch.LinesRemoved, Patch: ch.Patch, Summary: ch.Summary,
		})
	}
	return out
}
