package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"looprig/rig"
)

// marshalSimple must agree byte for byte with encoding/json (without HTML
// escaping) wherever it answers.
func TestMarshalSimpleMatchesEncodingJSON(t *testing.T) {
	values := []any{nil, true, false, 0, -7, int64(1) << 62, uint64(1) << 63, "", "plain text 0-9 a-z",
		"<html>&amp;", `quote "`, `back\slash`, "tab\t", "line\n", "é", "\u2028", "\x7f", "\xff",
		rig.StateCrashed, rig.SessionState("we\"ird"), time.Unix(0, 0).UTC(), map[string]any{"pid": 1}, 1.5}
	for _, v := range values {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		w := bytes.TrimSuffix(want.Bytes(), []byte("\n"))
		if got, ok := marshalSimple(v); ok && !bytes.Equal(got, w) {
			t.Errorf("marshalSimple(%#v) = %s, encoding/json says %s", v, got, w)
		}
		if got := marshal(v); !bytes.Equal(got, w) {
			t.Errorf("marshal(%#v) = %s, encoding/json says %s", v, got, w)
		}
	}
}
