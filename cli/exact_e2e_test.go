package cli_test

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Output bytes survive exactly: a turn on pipes (tty = false) printing
// bytes that are not UTF-8 has them journaled as they were (log --json
// spells such a chunk text_b64), streamed as they were (run --json), and
// printed as they were by run when its stdout is not a terminal; 100,000
// random bytes included.
func TestOutputBytesExact(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte("default_profile = \"pipes\"\n[profiles.pipes]\ntty = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	random := make([]byte, 100_000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.IntN(256))
	}
	file := filepath.Join(dir, "random")
	if err := os.WriteFile(file, random, 0o600); err != nil {
		t.Fatal(err)
	}
	id := decode[struct {
		ID string `json:"id"`
	}](t, h.must(0, "--config", cfg, "new", "--json").stdout).ID

	for _, c := range []struct {
		name, input string
		want        []byte
	}{
		{"latin-1", `printf '\351t\351 \377\376'`, []byte("\xe9t\xe9 \xff\xfe")},
		{"random", "cat " + file, random},
	} {
		// run: its stdout is a pipe here, so it prints the bytes as they are.
		r := h.must(0, "--config", cfg, "run", id, "--", c.input)
		if !bytes.Equal([]byte(r.stdout), c.want) {
			t.Errorf("%s: run printed %d bytes, %d differ from what the turn printed", c.name, len(r.stdout), diffBytes([]byte(r.stdout), c.want))
		}
		// run --json: the deltas and the checkpoints carry the bytes.
		var live, kept []byte
		for _, ev := range lines[map[string]any](t, h.must(0, "--config", cfg, "run", id, "--json", "--", c.input).stdout) {
			switch ev["type"] {
			case "OutputDelta":
				live = append(live, textOf(t, ev)...)
			case "TurnOutput":
				kept = append(kept, textOf(t, ev)...)
			}
		}
		if !bytes.Equal(live, c.want) || !bytes.Equal(kept, c.want) {
			t.Errorf("%s: run --json carried %d bytes live (%d differ), %d kept (%d differ)", c.name,
				len(live), diffBytes(live, c.want), len(kept), diffBytes(kept, c.want))
		}
	}
	// log --json: the journal holds them, the last turn's checkpoints.
	var journaled []byte
	for _, rec := range lines[map[string]any](t, h.must(0, "log", id, "--json").stdout) {
		if rec["type"] == "TurnStarted" {
			journaled = nil
		}
		if rec["type"] == "TurnOutput" {
			journaled = append(journaled, textOf(t, rec)...)
		}
	}
	if !bytes.Equal(journaled, random) {
		t.Errorf("the journal holds %d bytes of the last turn, %d differ", len(journaled), diffBytes(journaled, random))
	}
	if out := h.must(0, "log", id).stdout; strings.Contains(out, "\xff") {
		t.Errorf("log for people printed a raw byte that is not UTF-8")
	}
}

// textOf is an output event's bytes: its text, or its text_b64 decoded.
func textOf(t *testing.T, ev map[string]any) []byte {
	t.Helper()
	if s, ok := ev["text"].(string); ok {
		return []byte(s)
	}
	s, _ := ev["text_b64"].(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("text_b64 %q: %v", s, err)
	}
	return b
}

// diffBytes counts the positions where a and b differ (and the length
// difference).
func diffBytes(a, b []byte) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}
