package engine

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"looprig/internal/textsafe"
)

// agentOutput is the Sink the shell machinery streams an agent's stdout
// and stderr into (so its Output calls come from one goroutine). It cuts
// stdout into lines, bounded by maxAgentLine (a longer one is skipped,
// with a line saying so), hands each to parse (the agent's stream format:
// claudeStream, codexStream), passes on a line parse does not take as
// sanitized text, and passes stderr on sanitized. What parse writes goes
// through text (the agent's words) and say (a line of its own: a tool call,
// a result), sanitized (textsafe) and, for say, bounded: an agent's output
// is model output and tool output, which looprig does not control.
type agentOutput struct {
	sink    Sink
	agent   string                 // its name, for the lines it writes
	parse   func(line []byte) bool // false: not a message of the stream
	line    []byte                 // the unterminated line so far
	skipped int                    // bytes of a line over maxAgentLine being skipped
	midLine bool                   // the output so far does not end with a newline
}

// Output implements Sink: stdout is the stream, stderr passes.
func (o *agentOutput) Output(stream Stream, text string) {
	if stream == Stderr {
		o.emit(Stderr, textsafe.Sanitize(text))
		return
	}
	data := []byte(text)
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		piece := data
		if nl >= 0 {
			piece = data[:nl]
		}
		switch {
		case o.skipped > 0 || len(o.line)+len(piece) > maxAgentLine:
			o.skipped += len(o.line) + len(piece)
			o.line = o.line[:0]
		default:
			o.line = append(o.line, piece...)
		}
		if nl < 0 {
			return
		}
		data = data[nl+1:]
		o.endLine()
	}
}

// Gate implements Sink.
func (o *agentOutput) Gate(ctx context.Context, prompt string) (bool, error) {
	return o.sink.Gate(ctx, prompt)
}

// finish handles an unterminated last line and ends the output with a
// newline.
func (o *agentOutput) finish() {
	if len(o.line) > 0 || o.skipped > 0 {
		o.endLine()
	}
	o.newline()
}

func (o *agentOutput) endLine() {
	line := o.line
	o.line = o.line[:0]
	if o.skipped > 0 {
		n := o.skipped
		o.skipped = 0
		o.say(fmt.Sprintf("[%s: a message of %d bytes was skipped: over %d bytes]", o.agent, n, maxAgentLine))
		return
	}
	if len(bytes.TrimSpace(line)) == 0 || o.parse(line) {
		return
	}
	o.newline() // not the stream: a message of the program's own
	o.emit(Stdout, textsafe.Sanitize(string(line))+"\n")
}

// text writes assistant text.
func (o *agentOutput) text(s string) {
	s = textsafe.Sanitize(s)
	o.emit(Stdout, s)
}

// say writes one line of its own (a tool call, a result), bounded and
// sanitized, on a line of its own.
func (o *agentOutput) say(line string) {
	o.newline()
	o.emit(Stdout, bound(textsafe.Line(line), maxToolLine)+"\n")
}

func (o *agentOutput) newline() {
	if o.midLine {
		o.emit(Stdout, "\n")
	}
}

func (o *agentOutput) emit(stream Stream, s string) {
	if s == "" {
		return
	}
	o.sink.Output(stream, s)
	o.midLine = !strings.HasSuffix(s, "\n")
}
