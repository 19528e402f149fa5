package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"looprig/host"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/storage"
)

var cmdLs = &command{
	name: "ls", brief: "list the sessions of the store", help: helpLs,
	json: true, args: noArgs, needs: needsStore, timeout: 30 * time.Second,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.BoolVar(&o.long, "long", false, "full ids")
		fs.BoolVar(&o.long, "l", false, "full ids")
	},
	run: runLs,
}

func runLs(c *call) int {
	// The listing the last ls kept, while the store stands still
	// (rig.Lister.Keep): only the holders on this machine are asked.
	l := rig.NewLister(c.st, c.holderLiveness())
	l.Keep(keptListingPath(c.st))
	infos, _, err := l.List(c.ctx)
	if err != nil {
		return c.fail(fmt.Errorf("list sessions of %s: %w", c.st.Dir(), err))
	}
	if c.json {
		out := []byte{'['}
		for i, in := range infos {
			if i > 0 {
				out = append(out, ',', '\n')
			}
			out = append(out, jsonBytes(newSessionJSON(in, c.st.WorkspacesDir()))...)
		}
		c.stdout.Write(append(out, "]\n"...))
		return exitOK
	}
	if len(infos) == 0 {
		fmt.Fprintf(c.stdout, "no sessions in %s\ncreate one with 'looprig new', or a crashed one to restore with 'looprig demo'\n", textsafe.Line(c.st.Dir()))
		return exitOK
	}
	now := time.Now()
	out := bufio.NewWriter(c.stdout) // the table writer writes each cell apart
	defer out.Flush()
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	idHead := "SHORT ID"
	if c.long {
		idHead = "ID"
	}
	head := "STATE\t%s\tTITLE\tPROFILE\tEPOCH\tHOLDER\tTURN\tUPDATED"
	if c.long {
		head += "\tCHECKPOINT\tDIR\tBRANCH\tFORKED FROM"
	}
	fmt.Fprintf(w, head+"\n", idHead)
	var notes []string
	for _, in := range infos {
		id := in.ShortID()
		if c.long {
			id = in.ID
		}
		holder := "-"
		if in.Holder != nil {
			holder = fmt.Sprintf("%d@%s", in.Holder.PID, textsafe.Line(in.Holder.Host))
		}
		turn := "-"
		switch {
		case in.OpenTurn != "":
			turn = "#" + strconv.Itoa(in.Turn)
			if in.OpenGate != "" {
				turn += " gate"
			}
			if in.Attention != nil {
				turn += " asks"
			}
		case in.Checkpointing != nil:
			// The turn ended; its workspace is being checkpointed, and
			// the next turn waits for it.
			turn = "checkpointing"
			if d := in.Checkpointing.Done(); d != "" {
				turn += ": " + d
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s", stateLabel(in.State), id, orDash(clip(textsafe.Line(in.Title), 40)),
			orDash(textsafe.Line(in.Profile)), in.Epoch, holder, turn, ago(in.Updated, now))
		if c.long {
			branch := "-"
			if in.Worktree != nil {
				branch = textsafe.Line(in.Worktree.Branch)
			}
			fmt.Fprintf(w, "\t%s\t%s\t%s\t%s", checkpointCell(in.Checkpoint, now), orDash(textsafe.Line(sessionDir(in, c.st.WorkspacesDir()))), branch, forkCell(in.ForkedFrom))
		}
		fmt.Fprintln(w)
		if in.Reason != "" {
			notes = append(notes, fmt.Sprintf("%s %s: %s", in.ShortID(), in.State, textsafe.Line(in.Reason)))
		}
	}
	w.Flush()
	if len(notes) > 0 {
		fmt.Fprintln(out)
		for _, n := range notes {
			fmt.Fprintln(out, n)
		}
	}
	return exitOK
}

// probeTimeout bounds the hello of one host when take looks for it.
const probeTimeout = time.Second

// holderLiveness is how ls learns which held sessions a host on this
// machine serves (live: attachable) and which holders are stopped (not
// answering): host.HolderLiveness, from the process table and the socket
// directory, without a connection to any host (where the process table
// cannot be read, it connects as servedByHost does).
func (c *call) holderLiveness() rig.ListOption {
	key, err := storeKey(c.st)
	if err != nil {
		return rig.WithLiveness(nil)
	}
	dir, err := host.SocketDir(key)
	if err != nil {
		return rig.WithLiveness(nil)
	}
	return rig.WithLiveness(func(ctx context.Context, id string, h storage.Holder) rig.Liveness {
		return host.HolderLiveness(ctx, dir, id, h, host.WithClientVersion(Version))
	})
}

// servedByHost says whether a host on this machine serves a held session
// (a process listens on the session's socket, and its pid is the lease
// holder's: host.ServingPID), so that ls lists it live: attachable. A
// socket that does not answer in time says no: the session stays held.
func (c *call) servedByHost() func(context.Context, string, storage.Holder) bool {
	key, err := storeKey(c.st)
	if err != nil {
		return nil
	}
	dir, err := host.SocketDir(key)
	if err != nil {
		return nil
	}
	return func(ctx context.Context, id string, h storage.Holder) bool {
		ctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		pid, err := host.ServingPID(ctx, dir, id, host.WithClientVersion(Version))
		return err == nil && pid == h.PID
	}
}

// checkpointCell is the latest checkpoint's size and age, for ls -l.
func checkpointCell(cp *rig.CatalogCheckpoint, now time.Time) string {
	if cp == nil {
		return "-"
	}
	return fmt.Sprintf("%s, %s, %s", plural(cp.Files, "file"), byteSize(cp.Bytes), ago(cp.At, now))
}

// byteSize is n bytes for people: 512 B, 1.5 KiB, 3.0 MiB, 2.1 GiB.
// forkCell is where a fork came from, "1a2b3c4d turn 3" ("-" for a
// session that is not one).
func forkCell(f *event.ForkedFrom) string {
	if f == nil {
		return "-"
	}
	return rig.ShortID(textsafe.Line(f.Session)) + " turn " + strconv.Itoa(f.TurnIndex)
}

func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGT"[exp])
}

// stateLabel is the state as glyph and word, so it reads without colour.
func stateLabel(s rig.SessionState) string { return s.Glyph() + " " + string(s) }

// clip shortens s to n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// ago is t relative to now, for people.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return t.Local().Format("2006-01-02 15:04")
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 7*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
	return t.Local().Format("2006-01-02")
}

// plural is "1 turn" / "2 turns".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func shortIDs(ids []string) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = rig.ShortID(id)
	}
	return strings.Join(s, ", ")
}

// sessionDir is the directory session in works in: its root, or its
// private directory in workspaces (the store's); "" when its entry
// predates placements.
func sessionDir(in rig.SessionInfo, workspaces string) string {
	switch {
	case in.Root != "":
		return in.Root
	case in.Placement == rig.PlacementSession:
		return filepath.Join(workspaces, in.ID)
	}
	return ""
}

// keptListingPath is where ls keeps its listing for the next one: beside
// the store's files on this machine, in a directory of its own (a file
// written in the store's own directory would move its stamps).
func keptListingPath(st *openedStore) string {
	return filepath.Join(st.LocalDir(), "cache", "listing.json")
}
