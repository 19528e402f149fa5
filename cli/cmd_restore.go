package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"looprig/internal/termrender"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
)

var cmdRestore = &command{
	name: "restore", brief: "restore a session (and keep it live with --hold)", help: helpRestore,
	json: true, args: restoreArgs, needs: needsStore, interrupts: true,
	flags: func(fs *flag.FlagSet, o *opts) {
		restoreFlags(fs, o)
		fs.BoolVar(&o.hold, "hold", false, "keep the session live until SIGINT/SIGTERM")
		fs.BoolVar(&o.detach, "detach", false, "leave the session live in a background host")
		fs.BoolVar(&o.allCrashed, "all-crashed", false, "restore every crashed session (instead of ID), several at once")
	},
	run: runRestore,
}

// restoreArgs: one id, and --hold or --detach, not both.
func restoreArgs(c *call) error {
	if c.hold && c.detach {
		return usageErr(c.cmd, "--hold keeps the session in this process, --detach in a background host: choose one")
	}
	if c.allCrashed {
		switch {
		case c.hold:
			return usageErr(c.cmd, "--all-crashed restores many sessions: --hold keeps one in this process; use --detach")
		case len(c.args) > 0:
			return usageErr(c.cmd, fmt.Sprintf("--all-crashed restores every crashed session: give no id (got %q)", c.args[0]))
		case c.dash:
			return usageErr(c.cmd, `unexpected "--"`)
		}
		return nil
	}
	return oneID(c)
}

func runRestore(c *call) int {
	if c.allCrashed {
		return restoreAllCrashed(c)
	}
	if c.detach {
		return restoreDetached(c)
	}
	s, err := c.restoreSession(c.args[0])
	if err != nil {
		return c.failRestore(err)
	}
	id := s.SessionID().String()
	info := s.Restored()
	if c.json {
		out := newRestoreJSON(id, info)
		out.Held = c.hold
		if c.hold {
			out.PID = os.Getpid()
		}
		c.writeJSON(out)
	} else {
		c.printRestored(s.SessionID(), s.Status().Title, info)
	}
	if c.hold {
		if code := c.holdSession(s); code != exitOK {
			shutdown(s, c.sig)
			return code
		}
	}
	if err := shutdown(s, c.sig); err != nil {
		if errors.Is(err, errForced) {
			return exitInterrupted
		}
		if f := s.Err(); f != nil {
			return c.fail(leaseLost(id, f))
		}
		return c.fail(fmt.Errorf("session %s was restored but did not shut down cleanly: %w", rig.ShortID(id), err))
	}
	if !c.json {
		fmt.Fprintf(c.stdout, "shut down cleanly; run a turn with: looprig %srun %s -- INPUT\n", c.globalArgs(), rig.ShortID(id))
	}
	return exitOK
}

func newRestoreJSON(id string, info *rig.RestoreInfo) restoreJSON {
	out := restoreJSON{ID: id, Epoch: info.Epoch, Interrupted: nonNil(info.Interrupted), GatesClosed: nonNil(info.GatesClosed),
		ShortID: rig.ShortID(id), Records: info.Records, Adopted: changes(info.Adopted), AdoptedBy: info.AdoptedBy}
	out.Workspace = newWorkspaceFoundJSON(info.Workspace)
	return out
}

// printRestored says what a restore did, for people.
func (c *call) printRestored(id uuid.UUID, title string, info *rig.RestoreInfo) {
	if title != "" {
		title = " " + shortQuote(title, 60)
	}
	fmt.Fprintf(c.stdout, "restored session %s%s at epoch %d (%s replayed)\n",
		rig.ShortID(id.String()), title, info.Epoch, plural(int(info.Records), "record"))
	if n := len(info.Interrupted); n > 0 {
		fmt.Fprintf(c.stdout, "  interrupted %s left running by a crash: %s\n", plural(n, "turn"), shortIDs(info.Interrupted))
		c.printOutputTails(id, info.Interrupted)
	}
	if n := len(info.GatesClosed); n > 0 {
		fmt.Fprintf(c.stdout, "  closed %s nobody can answer any more: %s\n", plural(n, "open gate"), shortIDs(info.GatesClosed))
	}
	if len(info.Adopted) > 0 {
		fmt.Fprintf(c.stdout, "  %s:\n%s\n", adoptedHeading(info.AdoptedBy), driftTable(info.Adopted))
	}
	if w := info.Workspace; w != nil {
		c.printWorkspaceFound(w)
	}
}

// printWorkspaceFound says how the restore found the workspace against
// its last checkpoint, and what it did.
func (c *call) printWorkspaceFound(w *rig.WorkspaceFound) {
	if r := workspaceReport(w); r != "" {
		fmt.Fprintf(c.stdout, "  %s\n", r)
	}
}

// workspaceReport is what a restore found of the workspace and did, in a
// sentence safe to print; "" when there is nothing to say.
func workspaceReport(w *rig.WorkspaceFound) string {
	return textsafe.Line(w.Summary())
}

// restoreDetached restores the session in a new background host and
// returns once it serves it: the session stays live.
func restoreDetached(c *call) int {
	id, err := rig.FindSession(c.ctx, c.st, c.args[0])
	if err != nil {
		var unknown *rig.UnknownSessionError
		if errors.As(err, &unknown) {
			err = &rig.RestoreError{Kind: rig.RestoreDiscoveryFailed, Cause: err}
		}
		return c.fail(err)
	}
	rd, err := c.startHost(c.ctx, c.st, append(c.restoreFlagArgs(), id.String())...)
	if err != nil {
		return c.failRestore(err)
	}
	info := rd.Restored
	if info == nil {
		info = &rig.RestoreInfo{Epoch: rd.Epoch}
	}
	if c.json {
		out := newRestoreJSON(id.String(), info)
		out.Detached, out.PID = true, rd.PID
		c.writeJSON(out)
		return exitOK
	}
	c.printRestored(id, rd.Title, info)
	short := rig.ShortID(id.String())
	fmt.Fprintf(c.stdout, "live in host pid %d; follow it: looprig %sattach %s; shut it down: looprig %sstop %s\n",
		rd.PID, c.globalArgs(), short, c.globalArgs(), short)
	return exitOK
}

// restoreFlagArgs repeats the restore flags given, for a host.
func (c *call) restoreFlagArgs() []string {
	var args []string
	if c.profile.rig != "" {
		args = append(args, "--rig", c.profile.rig)
	}
	args = append(args, c.placementArgs()...)
	if c.acceptDrift {
		args = append(args, "--accept-drift")
	}
	return append(args, c.workspaceArgs()...)
}

// placementArgs repeats --placement and --root as given (the root made
// absolute: a host runs in /).
func (c *call) placementArgs() []string {
	var args []string
	if c.profile.placement != "" {
		args = append(args, "--placement", c.profile.placement)
	}
	if c.profile.root != "" {
		root := c.profile.root
		if abs, err := filepath.Abs(root); err == nil {
			root = abs
		}
		args = append(args, "--root", root)
	}
	return args
}

// givenProfile is the profile flags a command was given, each a word
// quoted for a shell and safe to print: the --rig, and the --placement
// and --root (the root made absolute).
type givenProfile struct {
	rig       []string
	placement []string
}

// all is every flag given, --rig first.
func (g givenProfile) all() []string { return append(append([]string{}, g.rig...), g.placement...) }

// givenProfile is what --rig, --placement and --root c was given.
func (c *call) givenProfile() givenProfile {
	var g givenProfile
	if c.profile.rig != "" {
		g.rig = []string{"--rig", textsafe.Line(shellQuote(c.profile.rig))}
	}
	args := c.placementArgs()
	for i := 1; i < len(args); i += 2 {
		g.placement = append(g.placement, args[i-1], textsafe.Line(shellQuote(args[i])))
	}
	return g
}

// adoptedHeading says who accepted the drift a restore adopted.
func adoptedHeading(source string) string {
	switch source {
	case acceptDriftSource:
		return "adopted configuration drift (--accept-drift); it is the baseline from now on"
	case acceptRootSource:
		return "moved to the root --root named; it is the baseline from now on"
	case "default":
		return "adopted info-level configuration drift (the engine and the workspace are unchanged); it is the baseline from now on"
	}
	return "adopted configuration drift (accepted by " + textsafe.Line(source) + "); it is the baseline from now on"
}

// nonNil makes a nil slice empty, so that JSON prints [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// holdSession keeps s live, printing its events, until SIGINT/SIGTERM
// (exit 0) or until the session loses its lease (exit 4).
func (c *call) holdSession(s *rig.Session) int {
	id := s.SessionID().String()
	if !c.json {
		fmt.Fprintf(c.stdout, "holding session %s (pid %d, epoch %d); press Ctrl-C to release it\n", rig.ShortID(id), os.Getpid(), s.Epoch())
	}
	ctx, cancel := context.WithCancel(c.sig.ctx)
	defer cancel()
	f, err := rig.Follow(ctx, s, s.Status().Tip)
	if err != nil {
		return c.fail(err)
	}
	defer f.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-s.Done():
			cancel()
		case <-stop:
		}
	}()
	p := newEventPrinter(c.env)
	defer p.flush()
	for {
		batch, err := f.Next(ctx)
		for _, env := range batch {
			p.print(env)
		}
		if f := s.Err(); f != nil {
			return c.fail(leaseLost(id, f))
		}
		switch {
		case ctx.Err() != nil:
			return exitOK // interrupted: the caller shuts down
		case errors.Is(err, rig.ErrFollowEnded):
			<-ctx.Done()
			if f := s.Err(); f != nil {
				return c.fail(leaseLost(id, f))
			}
			return exitOK
		case err != nil:
			return c.fail(fmt.Errorf("follow session %s: %w", rig.ShortID(id), err))
		}
	}
}

// tailLines is how many lines of an interrupted turn's output restore shows.
const tailLines = 10

// printOutputTails shows the last lines each interrupted turn printed
// before the crash, read back from the journal.
func (c *call) printOutputTails(id uuid.UUID, turns []string) {
	want := map[string]*strings.Builder{}
	for _, t := range turns {
		want[t] = &strings.Builder{}
	}
	rp, err := rig.ReadEvents(c.ctx, c.st, id, 0)
	if err != nil {
		return
	}
	defer rp.Close()
	for rp.Next() {
		if o, ok := rp.Envelope().Event.(event.TurnOutput); ok {
			if b := want[o.TurnID]; b != nil {
				b.WriteString(o.Text)
				if b.Len() > 256<<10 { // keep the tail bounded
					tail := b.String()[b.Len()-64<<10:]
					if i := strings.IndexByte(tail, '\n'); i >= 0 {
						tail = tail[i+1:] // from a line's start, not inside an escape sequence
					}
					b.Reset()
					b.WriteString(tail)
				}
			}
		}
	}
	prof := outputProfile(c.stdout)
	for _, t := range turns {
		// Rendered as a terminal would show it (render.go): its lines are
		// self-contained, SGR included.
		text := strings.TrimRight(termrender.String(want[t].String(), prof), "\n")
		if text == "" {
			fmt.Fprintf(c.stdout, "  turn %s printed nothing before the crash\n", rig.ShortID(t))
			continue
		}
		lines := strings.Split(text, "\n")
		if len(lines) > tailLines {
			lines = lines[len(lines)-tailLines:]
		}
		fmt.Fprintf(c.stdout, "  output of turn %s recorded before the crash (last %s):\n", rig.ShortID(t), plural(len(lines), "line"))
		for _, l := range lines {
			fmt.Fprintf(c.stdout, "    | %s\n", l)
		}
	}
}
