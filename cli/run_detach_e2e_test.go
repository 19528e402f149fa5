package cli_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The README's pipeline: run --detach prints the turn's id alone on
// stdout, so a shell takes it and waits for that turn; the sentence for
// people is on stderr. With --json it stays one JSON object.
func TestRunDetachIDForWait(t *testing.T) {
	h := newHarness(t)
	id, _ := h.detached()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := h.command(ctx) // its environment: the harness's store and runtime directory
	script := `t=$("$LR" --store "$STORE" run "$ID" --detach -- 'sleep 0.5; exit 7') || exit 90
printf '%s\n' "$t" >"$OUT"
"$LR" --store "$STORE" wait "$ID" --turn "$t"; code=$?; [ "$code" = 7 ] || { echo "wait exited $code, want 7 (the turn's)"; exit 91; }`
	out := t.TempDir() + "/turn"
	cmd.Path, cmd.Args = "/bin/sh", []string{"sh", "-c", script}
	cmd.Env = append(cmd.Env, "LR="+binary, "STORE="+h.store, "ID="+id, "OUT="+out)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("t=$(looprig run ID --detach ...); looprig wait ID --turn \"$t\": %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	turn := strings.TrimSuffix(string(b), "\n")
	if _, err := uuid.Parse(turn); err != nil {
		t.Fatalf("run --detach printed %q on stdout, want the turn's id", turn)
	}
	// wait reports the end of that turn, the one that exits 7, and exits
	// with its code.
	if got := stdout.String(); !strings.Contains(got, "exited 7") {
		t.Errorf("wait --turn $t printed %q, want the turn's exit code 7", got)
	}
	if !strings.Contains(stderr.String(), "looprig: started turn 0 ("+turn+")") {
		t.Errorf("stderr %q lacks the sentence naming the turn", stderr.String())
	}
	recs := h.log(id)
	var started string
	for _, r := range recs {
		if r.Type == "TurnStarted" {
			started = r.TurnID
		}
	}
	if started != turn {
		t.Errorf("the journal's turn is %s, run --detach printed %s", started, turn)
	}

	// --json: one object, the turn's id in it, nothing on stderr.
	r := h.must(0, "run", id, "--detach", "--json", "--", "true")
	v := decode[struct {
		TurnID string `json:"turn_id"`
		Index  int    `json:"index"`
	}](t, r.stdout)
	if _, err := uuid.Parse(v.TurnID); err != nil || v.Index != 1 || strings.Count(r.stdout, "\n") != 1 || r.stderr != "" {
		t.Errorf("run --detach --json: stdout %q stderr %q", r.stdout, r.stderr)
	}
}
