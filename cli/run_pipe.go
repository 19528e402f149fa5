package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"looprig/internal/textsafe"
	"looprig/rig"
)

// A run whose stdin is not a terminal (a script, a pipe, a file, cron's
// /dev/null) gives the turn that stdin, as `ssh host cmd` gives the remote
// command its own: what it reads goes to the turn's terminal as it comes,
// and its end is an end of file there. A command that asks a question
// then reads the script's answer, or end of file, instead of waiting for
// a `looprig send` nobody will type. The turn's terminal echoes what it
// reads, as a terminal does. A gate is never answered from it: only a
// person at a terminal answers a gate (termInput). A turn without a
// terminal (tty = false) reads /dev/null, and nothing is sent.

// pipeChunk bounds one send of piped input.
const pipeChunk = 16 << 10

// pipeQuiet is how long a turn prints nothing while its piped stdin gives
// it nothing before run says how to answer it: a command that waits for
// input nobody will write (a pipe kept open with nothing in it) does not
// leave a script waiting without a word. run cannot know the turn reads;
// it says what it sees.
const pipeQuiet = 5 * time.Second

// pollReadable waits until f can be read (true), or d passed (false), or
// ctx ended (its error).
func pollReadable(ctx context.Context, f *os.File, d time.Duration) (bool, error) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		wctx, cancel := context.WithDeadline(ctx, deadline)
		err := waitReadable(wctx, f)
		cancel()
		switch {
		case err == nil:
			return true, nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		case !errors.Is(err, context.DeadlineExceeded):
			return false, err
		}
	}
	return false, nil
}

// startPipe starts forwarding stdin when it is not a terminal; it returns
// a stop function that waits for the forwarding to end.
func (t *turnRunner) startPipe(ctx context.Context) (stop func()) {
	in, ok := t.c.stdin.(*os.File)
	if !ok || in == nil || isTerminal(in) {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { t.forwardPipe(ctx, in) })
	return func() {
		cancel()
		wg.Wait()
	}
}

// forwardPipe sends what in holds to the turn once it is submitted, then
// an end of file (two when the last line had no newline: the first ends
// that line, as ^D after text does on a terminal).
func (t *turnRunner) forwardPipe(ctx context.Context, in *os.File) {
	select {
	case <-t.submitted:
	case <-ctx.Done():
		return
	}
	if t.turnID == "" {
		return // the submit failed
	}
	if !t.exact {
		t.awaitTerminal(ctx) // a turn just started has its terminal a moment later
	}
	buf := make([]byte, pipeChunk)
	partial, hinted := false, false
	for {
		ready, err := pollReadable(ctx, in, pipeQuiet)
		if err != nil {
			return
		}
		if !ready {
			if !hinted && t.quietFor(pipeQuiet) {
				hinted = true
				short := textsafe.Line(shellQuote(t.c.args[0]))
				fmt.Fprintf(t.stderr(), "looprig: turn %d has printed nothing for %s and stdin has given it nothing: if it waits for input, answer it with 'looprig %ssend %s -- TEXT' (or --eof)\n",
					t.index, pipeQuiet, t.c.globalArgs(), short)
			}
			continue
		}
		n, rerr := in.Read(buf)
		if n > 0 {
			if !t.sendPipe(ctx, func(sctx context.Context) error { _, err := t.s.SendInput(sctx, string(buf[:n])); return err }) {
				return
			}
			partial = buf[n-1] != '\n'
		}
		if rerr != nil || n == 0 {
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				fmt.Fprintf(t.stderr(), "looprig: reading stdin for the turn: %s\n", textsafe.Line(rerr.Error()))
			}
			break
		}
	}
	eofs := 1
	if partial {
		eofs = 2
	}
	for range eofs {
		if !t.sendPipe(ctx, func(sctx context.Context) error { return t.s.SendEOF(sctx) }) {
			return
		}
	}
}

// sendPipe sends one piece of piped input with send, and says whether to
// go on: not when the turn has no terminal (tty = false: it reads
// /dev/null) or has ended, nor after a failure, which it reports.
func (t *turnRunner) sendPipe(ctx context.Context, send func(context.Context) error) bool {
	sctx, cancel := context.WithTimeout(ctx, lineTimeout)
	defer cancel()
	err := send(sctx)
	var noTerm *rig.NoTerminalError
	var noTurn *rig.NoTurnError
	switch {
	case err == nil:
		return true
	case errors.As(err, &noTerm), errors.As(err, &noTurn), ctx.Err() != nil:
		return false
	}
	fmt.Fprintf(t.stderr(), "looprig: stdin not sent to the turn: %s\n", textsafe.Line(err.Error()))
	return false
}

// quietFor says whether the turn has printed nothing for d (the start of
// the run counts as output).
func (t *turnRunner) quietFor(d time.Duration) bool {
	last := t.lastOutput.Load()
	return last != 0 && time.Since(time.Unix(0, last)) >= d
}
