package rigtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"looprig/rig"
)

// (The turns use stty, as /bin/sh has no read -s.) A program that prints
// its password prompt before it turns echo off (echo "Password:"; sleep;
// stty -echo; read) meets a sender that answers the
// prompt at once: Send sees the prompt with echo still on, waits for the
// echo to go off, and the secret goes in hidden, in no record; it says so
// (PromptEcho). A prompt whose program never turns echo off gets the text
// after PromptEchoWait, echoed and said so. A prompt printed with echo
// off already (read -rsp) and a question that is no password prompt are
// answered at once, with nothing to say.
func testPromptEcho(t *testing.T, e *env) {
	// The wait is longer than the default: under load the program may
	// take more than half a second to turn echo off.
	const wait = 10 * time.Second
	s := e.newSession(e.define(rig.WithPromptEchoWait(wait)))
	send := func(text string) (rig.Sent, time.Duration) {
		t.Helper()
		start := time.Now()
		sent, err := s.Send(waitCtx(t), rig.Input{Text: text, From: testClient})
		if err != nil {
			t.Fatalf("Send(%q): %v", text, err)
		}
		return sent, time.Since(start)
	}

	// Echo goes off a moment after the prompt: once the test says so,
	// while Send waits.
	secret := "pw-" + newMarker()
	ti := submit(t, s, `echo "Password:"; while [ ! -e go ]; do sleep 0.01; done; stty -echo; read pw; stty echo; echo "len ${#pw}"`)
	outputShows(t, e, s, ti.ID, "Password:")
	type result struct {
		sent rig.Sent
		err  error
	}
	res := make(chan result, 1)
	go func() {
		sent, err := s.Send(waitCtx(t), rig.Input{Text: secret + "\n", From: testClient})
		res <- result{sent, err}
	}()
	time.Sleep(30 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(s.Workspace(), "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.err != nil || !r.sent.PromptEcho || !r.sent.Hidden || r.sent.EchoWaited < 25*time.Millisecond {
		t.Errorf("at a prompt printed before echo went off: %+v, %v; want it awaited and hidden", r.sent, r.err)
	}
	waitIdle(t, s)
	if out := turnOutput(readJournal(t, e.raw, s.SessionID()), ti.ID); !strings.Contains(out, "len "+strconv.Itoa(len(secret))) || strings.Contains(out, secret) {
		t.Errorf("output %q: want the secret read, not echoed", out)
	}
	noRecordHolds(t, e, s, secret)

	// Echo never goes off: the default wait, then the text goes in.
	shutdown(t, s)
	s = e.newSession(e.define())
	visible := "shown-" + newMarker()
	ti = submit(t, s, `printf 'Enter passphrase: '; read pw; echo "got it"`)
	outputShows(t, e, s, ti.ID, "passphrase")
	if sent, took := send(visible + "\n"); !sent.PromptEcho || sent.Hidden || took < rig.PromptEchoWait {
		t.Errorf("at a prompt whose program keeps echo on: %+v after %s, want it echoed after %s", sent, took, rig.PromptEchoWait)
	}
	waitIdle(t, s)

	// Echo off before the prompt (read -rsp); a question that asks no
	// secret.
	ti = submit(t, s, `stty -echo; printf 'Password: '; read pw; stty echo; echo; echo "len ${#pw}"; printf 'Name: '; read n; echo "hi $n"`)
	outputShows(t, e, s, ti.ID, "Password:")
	waitTerminal(t, s, true)
	if sent, took := send("pw-" + newMarker() + "\n"); sent.PromptEcho || !sent.Hidden || sent.EchoWaited != 0 {
		t.Errorf("at read -rsp: %+v after %s, want hidden at once, nothing to say", sent, took)
	}
	outputShows(t, e, s, ti.ID, "Name:")
	waitTerminal(t, s, false)
	if sent, took := send("ann\n"); sent.PromptEcho || sent.Hidden || sent.EchoWaited != 0 {
		t.Errorf("at a name prompt: %+v after %s, want it written at once, nothing to say", sent, took)
	}
	waitIdle(t, s)
}
