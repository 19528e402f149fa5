package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"

	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/storage"
)

// takePoll is how often take looks whether the holder let go.
const takePoll = 200 * time.Millisecond

var cmdTake = &command{
	name: "take", brief: "take a session over from the process (on any machine) that holds it, and serve it here", help: helpTake,
	json: true, args: oneID, needs: needsStore,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.BoolVar(&o.takeInterrupt, "interrupt", false, "ask the holder to interrupt its running turn rather than wait for its end")
		fs.DurationVar(&o.takeTimeout, "timeout", 2*time.Minute, "how long the holder has to hand the session over")
	},
	run: runTake,
}

// TakeTimeoutError: the holder did not hand the session over in time.
type TakeTimeoutError struct {
	Session string
	Holder  storage.Holder
	Waited  time.Duration
}

func (e *TakeTimeoutError) Error() string {
	return fmt.Sprintf("the holder of session %s (pid %d on %s) did not hand it over within %s (a running turn is awaited: --interrupt interrupts it); to force it: looprig lease break %s --yes",
		rig.ShortID(e.Session), e.Holder.PID, textsafe.Line(e.Holder.Host), e.Waited, rig.ShortID(e.Session))
}

func runTake(c *call) int {
	id, err := rig.FindSession(c.ctx, c.st, c.args[0])
	if err != nil {
		return c.fail(err)
	}
	sid, short := id.String(), rig.ShortID(id.String())
	name := storage.SessionName(sid)
	st, err := c.st.Probe(c.ctx, name)
	if err != nil {
		return c.fail(err)
	}
	from := ""
	if st.Held {
		if serving := c.servedByHost(); serving != nil && serving(c.ctx, sid, st.Holder) {
			return c.fail(fmt.Errorf("session %s is live here already, in host pid %d: looprig %sattach %s", short, st.Holder.PID, c.globalArgs(), short))
		}
		from = fmt.Sprintf("%d@%s", st.Holder.PID, st.Holder.Host)
		if err := c.awaitHandOff(id, st); err != nil {
			return c.fail(err)
		}
	}
	rd, err := c.startHost(c.ctx, c.st, sid)
	if err != nil {
		return c.failRestore(err)
	}
	if c.json {
		c.writeJSON(takeJSON{ID: sid, ShortID: short, From: from, PID: rd.PID, Epoch: rd.Epoch})
		return exitOK
	}
	if from != "" {
		fmt.Fprintf(c.stdout, "took session %s over from %s: ", short, textsafe.Line(from))
	} else {
		fmt.Fprintf(c.stdout, "session %s was not held: ", short)
	}
	fmt.Fprintf(c.stdout, "live in host pid %d here at epoch %d; follow it: looprig %sattach %s\n", rd.PID, rd.Epoch, c.globalArgs(), short)
	return exitOK
}

// awaitHandOff asks the holder that st names to hand session id over and
// waits until it let go, at most c.takeTimeout; the request is withdrawn
// whatever happens.
func (c *call) awaitHandOff(uid uuid.UUID, st storage.LeaseStatus) error {
	id := uid.String()
	host, _ := os.Hostname()
	req := rig.HandOffRequest{To: fmt.Sprintf("%d@%s", os.Getpid(), host), Interrupt: c.takeInterrupt, Epoch: st.Epoch, At: time.Now().UTC()}
	if err := rig.RequestHandOff(c.ctx, c.st, uid, req); err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rig.WithdrawHandOff(ctx, c.st, uid)
	}()
	if !c.json {
		fmt.Fprintf(c.stderr, "looprig: asked pid %d on %s to hand session %s over…\n", st.Holder.PID, textsafe.Line(st.Holder.Host), rig.ShortID(id))
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.takeTimeout)
	defer cancel()
	tick := time.NewTicker(takePoll)
	defer tick.Stop()
	for {
		now, err := c.st.Probe(ctx, storage.SessionName(id))
		switch {
		case err == nil && !now.Held:
			return nil
		case err == nil && now.Epoch != st.Epoch:
			return fmt.Errorf("session %s was taken by pid %d on %s meanwhile", rig.ShortID(id), now.Holder.PID, textsafe.Line(now.Holder.Host))
		}
		select {
		case <-ctx.Done():
			if c.ctx.Err() != nil {
				return c.ctx.Err()
			}
			return &TakeTimeoutError{Session: id, Holder: st.Holder, Waited: c.takeTimeout}
		case <-tick.C:
		}
	}
}

// takeJSON is what take --json prints.
type takeJSON struct {
	ID      string `json:"id"`
	ShortID string `json:"short_id"`
	From    string `json:"from"` // the holder that handed it over, "" when none held it
	PID     int    `json:"pid"`  // the host that serves it here
	Epoch   uint64 `json:"epoch"`
}
