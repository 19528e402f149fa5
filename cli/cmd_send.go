package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"looprig/host"
	"looprig/rig"
)

// sendTimeout bounds a send, reading standard input included: the host
// gives a turn that does not read its input 5 s before it answers
// input_timeout.
const sendTimeout = 15 * time.Second

// maxStdinText bounds the text send --stdin reads: a reply or a password,
// not a file (a terminal's line holds 4095 bytes).
const maxStdinText = 64 << 10

var cmdSend = &command{
	name: "send", brief: "type into the terminal of a live session's running turn", help: helpSend,
	json: true, args: sendArgs, needs: needsStore, timeout: sendTimeout,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.BoolVar(&o.eof, "eof", false, "send an end of file (^D) instead of text")
		fs.BoolVar(&o.fromStdin, "stdin", false, "send the text standard input holds (at most 64 KiB), not arguments")
		fs.BoolVar(&o.noNewline, "n", false, "do not end the text with a newline")
	},
	run: runSend,
}

// sendArgs: send ID -- TEXT..., send ID --stdin, or send ID --eof.
func sendArgs(c *call) error {
	switch {
	case len(c.args) == 0:
		return usageErr(c.cmd, "missing session id: looprig send ID -- TEXT")
	case len(c.args) > 1 && !c.dash:
		return usageErr(c.cmd, fmt.Sprintf("put the text after \"--\": looprig send %s -- %s", c.args[0], strings.Join(c.args[1:], " ")))
	case len(c.args) > 1:
		return usageErr(c.cmd, fmt.Sprintf("unexpected argument %q before \"--\"", c.args[1]))
	case c.eof && c.fromStdin:
		return usageErr(c.cmd, "--eof sends an end of file, --stdin text: give one of them")
	case c.eof && c.dash:
		return usageErr(c.cmd, "--eof sends an end of file: give it no text")
	case c.fromStdin && c.dash:
		return usageErr(c.cmd, "--stdin reads the text from standard input: give no text after \"--\"")
	case !c.eof && !c.fromStdin && !c.dash:
		return usageErr(c.cmd, "missing text: looprig send "+c.args[0]+" -- TEXT (or --stdin, or --eof)")
	}
	return nil
}

func runSend(c *call) int {
	id, cl, err := c.connectArg()
	if err != nil {
		return c.fail(err)
	}
	defer cl.Close()
	out := sendJSON{ID: id.String(), ShortID: rig.ShortID(id.String()), EOF: c.eof}
	if c.eof {
		err = cl.SendEOF(c.ctx, "cli")
	} else {
		var text string
		if text, err = c.sendText(); err != nil {
			return c.fail(err)
		}
		out.Bytes = len(text)
		var sent host.Sent
		sent, err = cl.Send(c.ctx, text, "cli")
		out.Hidden, out.PromptEcho = sent.Hidden, sent.PromptEcho
	}
	if err != nil {
		return c.fail(err)
	}
	switch {
	case out.PromptEcho && out.Hidden:
		fmt.Fprintf(c.stderr, "looprig: warning: the turn printed what looks like a password prompt while its terminal still echoed input; "+
			"the text waited for the program to turn echo off and went in hidden, but a program that prompts before it turns echo off "+
			"can echo what a fast sender types: prompt with echo already off (bash: read -rsp 'Password: ' VAR)\n")
	case out.PromptEcho:
		fmt.Fprintf(c.stderr, "looprig: warning: the turn's last output looks like a password prompt, but its terminal echoed the text: "+
			"it is in the turn's output and its journal (looprig log); if it was a secret, change it, and have the program turn echo off "+
			"before it prompts (bash: read -rsp 'Password: ' VAR)\n")
	}
	if out.Hidden && c.dash {
		fmt.Fprintf(c.stderr, "looprig: warning: the turn's terminal has echo off (a password prompt), and the text was on looprig's command line, "+
			"which every local user can read (ps, /proc/PID/cmdline) while it runs: send secrets with 'looprig send %s --stdin'\n", out.ShortID)
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

// sendText is the text to send: the arguments after "--" joined by
// spaces, or with --stdin what standard input holds; a newline ends it
// unless -n or it ends with one already (--stdin).
func (c *call) sendText() (string, error) {
	text := strings.Join(c.input, " ")
	if c.fromStdin {
		var err error
		if text, err = readStdinText(c.ctx, c.stdin, maxStdinText); err != nil {
			return "", err
		}
		if strings.HasSuffix(text, "\n") {
			return text, nil
		}
	}
	if !c.noNewline {
		text += "\n"
	}
	return text, nil
}

// readStdinText reads r to its end, at most max bytes, or until ctx ends
// (r is then left to the process's exit). More than max bytes is a
// usage error: send takes a reply, not a file.
func readStdinText(ctx context.Context, r io.Reader, max int) (string, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
		done <- result{b, err}
	}()
	select {
	case <-ctx.Done():
		return "", fmt.Errorf("read the text from standard input: %w", context.Cause(ctx))
	case res := <-done:
		switch {
		case res.err != nil:
			return "", fmt.Errorf("read the text from standard input: %w", res.err)
		case len(res.b) > max:
			return "", usageErr("send", fmt.Sprintf("standard input holds more than %d KiB: send takes a reply, not a file", max>>10))
		}
		return string(res.b), nil
	}
}

// sendJSON is what send prints.
type sendJSON struct {
	ID      string `json:"id"`
	ShortID string `json:"short_id"`
	Bytes   int    `json:"bytes"`
	EOF     bool   `json:"eof"`
	Hidden  bool   `json:"hidden"`
	// PromptEcho: the turn's last output looked like a password prompt
	// while its terminal still echoed (send warns on stderr).
	PromptEcho bool `json:"prompt_echo"`
}
