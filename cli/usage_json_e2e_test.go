package cli_test

import (
	"strings"
	"testing"
)

// A flag's bad value is named as the help spells it, --timeout, and with
// --json anywhere before "--" the usage error is JSON, also when --json
// comes after the bad flag (whose error stops the parsing).
func TestBadFlagValueSaysTheFlag(t *testing.T) {
	h := newHarness(t)
	const msg = `wait: invalid value "abc" for --timeout: want a duration such as 30s, 5m or 1h`
	r := h.must(2, "wait", "abcd", "--timeout", "abc")
	if !strings.Contains(r.stderr, "looprig: "+msg+"\n") || r.stdout != "" {
		t.Errorf("wait --timeout abc: stdout %q stderr %q", r.stdout, r.stderr)
	}
	for _, args := range [][]string{
		{"wait", "abcd", "--json", "--timeout", "abc"},
		{"wait", "abcd", "--timeout", "abc", "--json"},
		{"wait", "abcd", "--timeout=abc", "--json=true"},
	} {
		r := h.must(2, args...)
		e := decode[errorShape](t, r.stdout)
		if e.Error.Type != "UsageError" || e.Error.Kind != "usage" || e.Error.Message != msg || r.stderr != "" {
			t.Errorf("looprig %s: stdout %q stderr %q", strings.Join(args, " "), r.stdout, r.stderr)
		}
	}
	// Not asked for: after "--", or turned off.
	for _, args := range [][]string{
		{"run", "abcd", "--bogus", "--", "--json"},
		{"wait", "abcd", "--timeout", "abc", "--json=false"},
	} {
		if r := h.must(2, args...); r.stdout != "" || !strings.HasPrefix(r.stderr, "looprig: ") {
			t.Errorf("looprig %s: stdout %q stderr %q", strings.Join(args, " "), r.stdout, r.stderr)
		}
	}
}
