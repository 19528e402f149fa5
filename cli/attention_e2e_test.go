package cli_test

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

type attentionRow struct {
	ID        string `json:"id"`
	Attention *struct {
		Reason string `json:"reason"`
		Text   string `json:"text"`
		Since  string `json:"since"`
		TurnID string `json:"turn_id"`
	} `json:"attention"`
}

// attention is session id's "attention" in ls --json.
func (h *harness) attention(id string) attentionRow {
	h.t.Helper()
	for _, r := range decode[[]attentionRow](h.t, h.must(0, "ls", "--json").stdout) {
		if r.ID == id {
			return r
		}
	}
	h.t.Fatalf("session %s not listed", id)
	return attentionRow{}
}

// attentionWhen polls ls --json until ok holds for session id's row (the
// host writes the catalog entry just after it journals).
func (h *harness) attentionWhen(id, what string, ok func(attentionRow) bool) attentionRow {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := h.attention(id)
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("ls --json never showed %s: %+v", what, r.Attention)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type attentionWait struct {
	For    string `json:"for"`
	TurnID string `json:"turn_id"`
	Reason string `json:"reason"`
	Text   string `json:"text"`
}

// A turn that rings the bell marks its session: wait --for attention
// returns (then at once, while it is pending), ls --json shows it, the
// journal has it once; attaching clears it (also when its record is older
// than what attach replays), and a notification's text is carried.
func TestAttention(t *testing.T) {
	h := newHarness(t)
	id, _ := h.detached()
	turn := decode[struct {
		TurnID string `json:"turn_id"`
	}](t, h.must(0, "run", id, "--detach", "--json", "--",
		`sleep 0.5; printf '\a'; sleep 0.2; head -c 4500000 /dev/zero | tr '\0' x; sleep 30`).stdout)
	w := decode[attentionWait](t, h.must(0, "wait", id, "--for", "attention", "--timeout", "20s", "--json").stdout)
	if w.For != "attention" || w.Reason != "bell" || w.TurnID != turn.TurnID || w.Text != "" {
		t.Fatalf("wait --for attention = %+v, want a bell of turn %s", w, turn.TurnID)
	}
	if r := h.must(0, "wait", id, "--for", "attention", "--timeout", "1s"); !strings.Contains(r.stdout, "asks for you (bell)") {
		t.Errorf("wait on a pending attention printed %q", r.stdout)
	}
	row := h.attentionWhen(id, "the bell", func(r attentionRow) bool { return r.Attention != nil })
	if a := row.Attention; a.Reason != "bell" || a.TurnID != turn.TurnID || a.Since == "" {
		t.Errorf("ls --json attention %+v", a)
	}
	if out := h.must(0, "ls").stdout; !strings.Contains(out, "#0 asks") {
		t.Errorf("ls does not say the turn asks:\n%s", out)
	}
	if n := strings.Count(strings.Join(types(h.log(id)), " "), "Attention"); n != 1 {
		t.Errorf("%d Attention records, want 1", n)
	}
	// 4.5 MB of output: 68 checkpoints of 64 KiB after the bell's record,
	// more than attach replays.
	deadline := time.Now().Add(20 * time.Second)
	for len(h.log(id)) < 75 {
		if time.Now().After(deadline) {
			t.Fatalf("the output was not journaled: %d records", len(h.log(id)))
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Attaching is looking: the mark goes, durably (AttentionSeen), and
	// wait has nothing to return.
	a := h.start("attach", id)
	a.stderr.waitFor(t, "attached to session")
	h.attentionWhen(id, "no attention once attached", func(r attentionRow) bool { return r.Attention == nil })
	seen := false
	for _, r := range h.log(id) {
		seen = seen || r.Type == "AttentionSeen"
	}
	if !seen {
		t.Errorf("no AttentionSeen in the journal: %v", types(h.log(id)))
	}
	h.must(124, "wait", id, "--for", "attention", "--timeout", "300ms")
	a.cmd.Process.Signal(syscall.SIGINT)
	if code := a.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("attach exited %d", code)
	}

	// A notification says what it is about; the end of its turn clears it.
	id2, _ := h.detached()
	h.must(0, "run", id2, "--detach", "--", `printf '\033]9;build done\a'; sleep 30`)
	w = decode[attentionWait](t, h.must(0, "wait", id2, "--for", "attention", "--timeout", "20s", "--json").stdout)
	if w.Reason != "osc9" || w.Text != "build done" {
		t.Fatalf("wait --for attention = %+v, want osc9 \"build done\"", w)
	}
	row = h.attentionWhen(id2, "the notification", func(r attentionRow) bool { return r.Attention != nil })
	if a := row.Attention; a.Reason != "osc9" || a.Text != "build done" {
		t.Errorf("ls --json attention %+v, want osc9 \"build done\"", a)
	}
	h.must(0, "stop", id2)
	if r := h.attention(id2); r.Attention != nil {
		t.Errorf("a stopped session still asks: %+v", r.Attention)
	}
	h.must(6, "wait", id2, "--for", "attention")
}

// A call that comes while attach follows the session is seen as it comes.
func TestAttentionWhileAttached(t *testing.T) {
	h := newHarness(t)
	id, _ := h.detached()
	h.must(0, "run", id, "--detach", "--", `echo started; sleep 1; printf '\033]777;notify;agent;your turn\033\\'; sleep 30`)
	a := h.start("attach", id)
	a.stderr.waitFor(t, "attached to session")
	deadline := time.Now().Add(20 * time.Second)
	for {
		ts := strings.Join(types(h.log(id)), " ")
		if i := strings.Index(ts, "Attention "); i >= 0 && strings.Contains(ts[i:], "AttentionSeen") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the notification that came while attached was not seen: %s", ts)
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.attentionWhen(id, "no attention", func(r attentionRow) bool { return r.Attention == nil })
	a.cmd.Process.Signal(syscall.SIGINT)
	a.wait(t, 10*time.Second)
	// attach --json is a program reading, not a person looking.
	id2, _ := h.detached()
	h.must(0, "run", id2, "--detach", "--", `printf '\a'; sleep 30`)
	h.must(0, "wait", id2, "--for", "attention", "--timeout", "20s")
	j := h.start("attach", id2, "--json")
	j.waitLine(t, `"type":"Attention"`)
	time.Sleep(300 * time.Millisecond)
	if r := h.attention(id2); r.Attention == nil {
		t.Errorf("attach --json cleared the attention")
	}
	j.cmd.Process.Signal(syscall.SIGINT)
	j.wait(t, 10*time.Second)
}
