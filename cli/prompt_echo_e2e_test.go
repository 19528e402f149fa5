package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"looprig/rig/event"
)

// The README's hidden-input example, answered as fast as a client can: a
// program that prints "password:" and only then turns echo off (echo;
// read -rs) must not have the secret echoed into its output and journal.
// A client that sends the moment the prompt arrives in its event stream
// meets echo still on; the host waits for it to go off, and the secret
// goes in hidden, 40 times of 40 (those that met echo on are reported so).
// looprig send warns on stderr; at a prompt printed with echo off
// (read -rsp) it says nothing.
func TestFastSendAtAPasswordPrompt(t *testing.T) {
	h := newHarness(t)
	id, _ := h.detached()
	c := h.dialHost(id)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	st, err := c.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	// answer waits for the prompt in the live stream and sends text at
	// once; it returns what the host said.
	answer := func(prompt, text string) (hidden, promptEcho bool) {
		t.Helper()
		for {
			env, err := st.Next(ctx)
			if err != nil {
				t.Fatalf("waiting for %q: %v", prompt, err)
			}
			if d, ok := env.Event.(event.OutputDelta); ok && strings.Contains(d.Text, prompt) {
				break
			}
		}
		sent, err := c.Send(ctx, text, "test")
		if err != nil {
			t.Fatalf("send at %q: %v", prompt, err)
		}
		return sent.Hidden, sent.PromptEcho
	}
	const tries = 40
	leaked, met := 0, 0
	var secrets []string
	for i := range tries {
		secret := "s3cret-" + strings.Repeat("x", i%5) + time.Now().Format("150405.000000")
		secrets = append(secrets, secret)
		h.must(0, "run", id, "--detach", "--", `bash -c 'echo "password:"; read -rs pw; echo "read ${#pw} characters"'`)
		hidden, promptEcho := answer("password:", secret+"\n")
		if !hidden {
			leaked++
		}
		if promptEcho {
			met++ // echo was still on when the answer arrived
		}
		h.must(0, "wait", id, "--for", "idle", "--timeout", "30s")
	}
	t.Logf("of %d fast answers to echo+read -rs, %d met the prompt with echo still on and waited", tries, met)
	if leaked > 0 {
		t.Errorf("of %d fast answers to echo+read -rs, %d went in with echo on", tries, leaked)
	}
	journal := h.must(0, "log", id, "--json").stdout
	for _, s := range secrets {
		if strings.Contains(journal, s) {
			t.Errorf("the journal holds the secret %q", s)
		}
	}

	// looprig send says so on stderr.
	h.must(0, "run", id, "--detach", "--", `bash -c 'echo "password:"; sleep 0.2; read -rs pw; echo "read ${#pw} characters"'`)
	answerCLI := func(prompt string) result {
		for {
			env, err := st.Next(ctx)
			if err != nil {
				t.Fatalf("waiting for %q: %v", prompt, err)
			}
			if d, ok := env.Event.(event.OutputDelta); ok && strings.Contains(d.Text, prompt) {
				break
			}
		}
		return h.runIn("hunter2-"+time.Now().Format("150405.000000")+"\n", "send", id, "--stdin", "--json")
	}
	r := answerCLI("password:")
	if r.code != 0 || !strings.Contains(r.stdout, `"hidden":true`) || !strings.Contains(r.stdout, `"prompt_echo":true`) ||
		!strings.Contains(r.stderr, "warning: the turn printed what looks like a password prompt while its terminal still echoed") ||
		!strings.Contains(r.stderr, "read -rsp") {
		t.Errorf("send at a prompt printed with echo on: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("send said:\n%s", r.stderr)
	h.must(0, "wait", id, "--for", "idle", "--timeout", "30s")

	h.must(0, "run", id, "--detach", "--", `bash -c 'read -rsp "password: " pw; echo; echo "read ${#pw} characters"'`)
	r = answerCLI("password:")
	if r.code != 0 || !strings.Contains(r.stdout, `"hidden":true`) || !strings.Contains(r.stdout, `"prompt_echo":false`) || r.stderr != "" {
		t.Errorf("send at read -rsp: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
