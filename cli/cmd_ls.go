package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"looprig/internal/textsafe"
	"looprig/rig"
)

func cmdLs(e *env, args []string) int {
	fs := e.newFlags("ls")
	fs.BoolVar(&e.json, "json", false, "JSON output")
	long := fs.Bool("long", false, "full ids")
	fs.BoolVar(long, "l", false, "full ids")
	pos, _, dash, code, done := e.parse(fs, args, helpLs)
	if done {
		return code
	}
	if code, bad := e.wantNoArgs(pos, dash); bad {
		return code
	}
	if _, err := e.loadConfig(); err != nil { // a bad configuration is an error everywhere
		return e.fail(err)
	}
	st, err := e.openStore()
	if err != nil {
		return e.fail(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	infos, err := rig.ListSessions(ctx, st)
	if err != nil {
		return e.fail(fmt.Errorf("list sessions of %s: %w", st.Dir(), err))
	}
	if e.json {
		arr := make([][]byte, len(infos))
		size := 3
		for i, in := range infos {
			arr[i] = sessionJSON(in).bytes()
			size += len(arr[i]) + 2
		}
		out := make([]byte, 0, size)
		out = append(out, '[')
		for i, b := range arr {
			if i > 0 {
				out = append(out, ',', '\n')
			}
			out = append(out, b...)
		}
		out = append(out, "]\n"...)
		e.stdout.Write(out)
		return exitOK
	}
	if len(infos) == 0 {
		fmt.Fprintf(e.stdout, "no sessions in %s\ncreate one with 'looprig new', or a crashed one to restore with 'looprig demo'\n", textsafe.Line(st.Dir()))
		return exitOK
	}
	now := time.Now()
	w := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	idHead := "SHORT ID"
	if *long {
		idHead = "ID"
	}
	fmt.Fprintf(w, "STATE\t%s\tTITLE\tPROFILE\tEPOCH\tHOLDER\tTURN\tUPDATED\n", idHead)
	var notes []string
	for _, in := range infos {
		id := in.ShortID()
		if *long {
			id = in.ID
		}
		holder := "-"
		if in.Holder != nil {
			holder = fmt.Sprintf("%d@%s", in.Holder.PID, textsafe.Line(in.Holder.Host))
		}
		turn := "-"
		if in.OpenTurn != "" {
			turn = "#" + strconv.Itoa(in.Turn)
			if in.OpenGate != "" {
				turn += " gate"
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", stateLabel(in.State), id, orDash(clip(textsafe.Line(in.Title), 40)),
			orDash(textsafe.Line(in.Profile)), in.Epoch, holder, turn, ago(in.Updated, now))
		if in.Reason != "" {
			notes = append(notes, fmt.Sprintf("%s %s: %s", in.ShortID(), in.State, textsafe.Line(in.Reason)))
		}
	}
	w.Flush()
	if len(notes) > 0 {
		fmt.Fprintln(e.stdout)
		for _, n := range notes {
			fmt.Fprintln(e.stdout, n)
		}
	}
	return exitOK
}

// sessionJSON is one element of `ls --json`.
func sessionJSON(in rig.SessionInfo) *obj {
	o := newObj().set("id", in.ID).set("short_id", in.ShortID()).set("state", in.State).
		set("title", in.Title).set("profile", in.Profile).set("epoch", in.Epoch)
	if in.Holder != nil {
		o.set("holder", map[string]any{"pid": in.Holder.PID, "host": in.Holder.Host, "acquired": jsonTime(in.Holder.Acquired)})
	} else {
		o.set("holder", nil)
	}
	if in.OpenTurn != "" {
		o.set("open_turn", in.OpenTurn).set("turn_index", in.Turn)
	} else {
		o.set("open_turn", nil).set("turn_index", nil)
	}
	if in.OpenGate != "" {
		o.set("open_gate", in.OpenGate)
	} else {
		o.set("open_gate", nil)
	}
	return o.set("updated", jsonTime(in.Updated)).set("reason", in.Reason).
		set("engine", in.Engine).set("turns", in.Turns).set("last_seq", in.LastSeq).set("created", jsonTime(in.Created))
}

// stateLabel is the state as glyph and word, so it reads without colour.
func stateLabel(s rig.SessionState) string {
	glyph := "?"
	switch s {
	case rig.StateLive:
		glyph = "●"
	case rig.StateHeld:
		glyph = "◆"
	case rig.StateIdle:
		glyph = "○"
	case rig.StateCrashed:
		glyph = "✗"
	case rig.StateBroken:
		glyph = "!"
	}
	return glyph + " " + string(s)
}

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
