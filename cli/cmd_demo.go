package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
)

// demoChildCommand is the hidden subcommand `demo` runs in a helper
// process: it creates the demo session, starts the long turn, reports
// "ready ID" on stdout once enough output is durable, and waits to be
// killed.
const demoChildCommand = "__demo-child"

const (
	demoTitle = "demo: crashed mid-turn"
	demoInput = `for i in $(seq 60); do echo "line $i"; sleep 1; done`
	// demoReadyLine is the output line that must be durable before the
	// helper is killed: two seconds of output.
	demoReadyLine = "line 3"
)

var cmdDemo = &command{
	name: "demo", brief: "leave a crashed session in the store to restore", help: helpDemo,
	json: true, args: noArgs, needs: needsStore, interrupts: true, timeout: 15 * time.Second,
	run: runDemo,
}

func runDemo(c *call) int {
	// needsStore created the store and checked it before the helper
	// starts; the helper opens it itself.
	dir := c.st.Dir()
	c.st.Close()
	exe, err := os.Executable()
	if err != nil {
		return c.fail(fmt.Errorf("demo: find the looprig executable: %w", err))
	}
	child := exec.Command(exe, "--store", dir, demoChildCommand)
	stdin, err := child.StdinPipe() // never written: its EOF tells the helper we are gone
	if err != nil {
		return c.fail(err)
	}
	defer stdin.Close()
	out, err := child.StdoutPipe()
	if err != nil {
		return c.fail(err)
	}
	var stderr strings.Builder
	child.Stderr = &limitedWriter{w: &stderr, n: 8 << 10}
	if err := child.Start(); err != nil {
		return c.fail(fmt.Errorf("demo: start the helper process: %w", err))
	}
	ready := make(chan string, 1)
	go func() {
		defer close(ready)
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil {
			ready <- strings.TrimSpace(line)
		}
		io.Copy(io.Discard, out)
	}()
	var id string
	select {
	case line, ok := <-ready:
		if ok {
			id, _ = strings.CutPrefix(line, "ready ")
		}
	case <-c.ctx.Done():
	}
	// The crash: SIGKILL, no chance to clean up.
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	if id == "" {
		msg := "demo: the helper process did not get the session ready"
		if err := c.ctx.Err(); err != nil {
			msg += ": " + err.Error()
		}
		if s := strings.TrimSpace(stderr.String()); s != "" {
			msg += ": " + s
		}
		return c.fail(errors.New(msg))
	}
	short := rig.ShortID(id)
	if c.json {
		c.writeJSON(demoJSON{ID: id, ShortID: short, Title: demoTitle, HelperPID: child.Process.Pid})
		return exitOK
	}
	self := selfCommand(exe) + " " + c.globalArgs()
	fmt.Fprintf(c.stdout, `A session crashed mid-turn: helper process %d ran
  %s
in session %s %q and was killed with SIGKILL after its output reached %q.

See it (state crashed):  %sls
Restore it:              %srestore %s
`, child.Process.Pid, demoInput, short, demoTitle, demoReadyLine, self, self, short)
	return exitOK
}

// selfCommand is how a hint names the looprig that runs (exe, from
// os.Executable): "looprig" when that is what the PATH finds, else exe's
// path quoted for a shell (./looprig built in a checkout, not installed).
func selfCommand(exe string) string {
	if onPath, err := exec.LookPath("looprig"); err == nil {
		a, aerr := os.Stat(onPath)
		b, berr := os.Stat(exe)
		if aerr == nil && berr == nil && os.SameFile(a, b) {
			return "looprig"
		}
	}
	return textsafe.Line(shellQuote(exe))
}

// demoChild runs in the helper process of `demo`.
func demoChild(e *env, args []string) int {
	if len(args) > 0 {
		return e.fail(usageErr(demoChildCommand, "no arguments"))
	}
	st, err := e.openStore()
	if err != nil {
		return e.fail(err)
	}
	defer st.Close()
	sig := notifyInterrupts()
	defer sig.stop()
	ctx, cancel := context.WithTimeout(sig.ctx, 30*time.Second)
	defer cancel()
	r, err := defineRig(st, rig.DefaultProfile(), nil)
	if err != nil {
		return e.fail(err)
	}
	s, err := r.NewSession(ctx, rig.WithTitle(demoTitle))
	if err != nil {
		return e.fail(err)
	}
	defer func() {
		// Only reached when the parent did not kill us: shut down cleanly.
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		s.Shutdown(sctx)
	}()
	f, err := rig.Follow(ctx, s, s.Status().Tip)
	if err != nil {
		return e.fail(err)
	}
	defer f.Close()
	if _, err := s.Submit(ctx, demoInput); err != nil {
		return e.fail(err)
	}
	var durable strings.Builder
	for !strings.Contains(durable.String(), demoReadyLine+"\n") {
		batch, err := f.Next(ctx)
		if err != nil {
			return e.fail(fmt.Errorf("demo helper: waiting for output: %v", errors.Join(err, s.Err())))
		}
		for _, env := range batch {
			if o, ok := env.Event.(event.TurnOutput); ok {
				durable.WriteString(o.Text)
			}
		}
	}
	fmt.Fprintf(e.stdout, "ready %s\n", s.SessionID())
	// Wait for the SIGKILL; if the parent went away instead (stdin EOF),
	// or after a bound, shut down cleanly.
	if f, ok := e.stdin.(*os.File); ok {
		waitEOF(ctx, f)
	} else {
		<-ctx.Done()
	}
	return exitError
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
