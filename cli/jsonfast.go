package cli

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
)

// marshalSimple encodes the values `ls --json` and the event lines are made
// of — nil, booleans, integers, and strings of printable ASCII without
// quotes or backslashes — exactly as marshal's encoding/json does, without
// its per-call encoder. It reports false for anything else, which marshal
// then encodes the general way. Listing 10k sessions sets 150k values.
func marshalSimple(v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return []byte("null"), true
	case json.Marshaler, encoding.TextMarshaler:
		return nil, false
	case string:
		return quoteSimple(x)
	case bool:
		return strconv.AppendBool(nil, x), true
	case int:
		return strconv.AppendInt(nil, int64(x), 10), true
	case int64:
		return strconv.AppendInt(nil, x, 10), true
	case uint64:
		return strconv.AppendUint(nil, x, 10), true
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return quoteSimple(rv.String())
	}
	return nil, false
}

// quoteSimple quotes s if no byte of it needs escaping.
func quoteSimple(s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return nil, false
		}
	}
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}
