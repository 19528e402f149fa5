package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"looprig/rig"
)

// sendTimeout bounds a send: the host gives a turn that does not read its
// input 5 s before it answers input_timeout.
const sendTimeout = 15 * time.Second

var cmdSend = &command{
	name: "send", brief: "type into the terminal of a live session's running turn", help: helpSend,
	json: true, args: sendArgs, needs: needsStore, timeout: sendTimeout,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.BoolVar(&o.eof, "eof", false, "send an end of file (^D) instead of text")
		fs.BoolVar(&o.noNewline, "n", false, "do not end the text with a newline")
	},
	run: runSend,
}

// sendArgs: send ID -- TEXT..., or send ID --eof.
func sendArgs(c *call) error {
	switch {
	case len(c.args) == 0:
		return usageErr(c.cmd, "missing session id: looprig send ID -- TEXT")
	case len(c.args) > 1 && !c.dash:
		return usageErr(c.cmd, fmt.Sprintf("put the text after \"--\": looprig send %s -- %s", c.args[0], strings.Join(c.args[1:], " ")))
	case len(c.args) > 1:
		return usageErr(c.cmd, fmt.Sprintf("unexpected argument %q before \"--\"", c.args[1]))
	case c.eof && c.dash:
		return usageErr(c.cmd, "--eof sends an end of file: give it no text")
	case !c.eof && !c.dash:
		return usageErr(c.cmd, "missing text: looprig send "+c.args[0]+" -- TEXT (or --eof)")
	}
	return nil
}

func runSend(c *call) int {
	id, err := rig.FindSession(c.ctx, c.st, c.args[0])
	if err != nil {
		return c.fail(err)
	}
	cl, err := c.connect(c.ctx, id.String())
	if err != nil {
		return c.fail(err)
	}
	defer cl.Close()
	out := sendJSON{ID: id.String(), ShortID: rig.ShortID(id.String()), EOF: c.eof}
	if c.eof {
		err = cl.SendEOF(c.ctx, "cli")
	} else {
		text := strings.Join(c.input, " ")
		if !c.noNewline {
			text += "\n"
		}
		out.Bytes = len(text)
		out.Hidden, err = cl.SendInput(c.ctx, text, "cli")
	}
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		c.writeJSON(out)
		return exitOK
	}
	switch {
	case c.eof:
		fmt.Fprintf(c.stdout, "sent end of file to session %s\n", out.ShortID)
	case out.Hidden:
		fmt.Fprintf(c.stdout, "sent %d bytes to session %s (its terminal had echo off: journaled as hidden input)\n", out.Bytes, out.ShortID)
	default:
		fmt.Fprintf(c.stdout, "sent %d bytes to session %s\n", out.Bytes, out.ShortID)
	}
	return exitOK
}

// sendJSON is what send prints.
type sendJSON struct {
	ID      string `json:"id"`
	ShortID string `json:"short_id"`
	Bytes   int    `json:"bytes"`
	EOF     bool   `json:"eof"`
	Hidden  bool   `json:"hidden"`
}
