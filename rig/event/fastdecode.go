package event

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DecodeFast is r.Decode(): the same event or the same error for every r.
// The data of the events a turn streams by the thousand (OutputDelta,
// TurnOutput) is read without encoding/json's reflection when it is
// exactly what Marshal writes (its keys, in its order, no white space, no
// surrogate escape); anything else, and anything the fast read refuses,
// takes r.Decode. FuzzDecodeFast holds it to that.
func DecodeFast(r Raw) (Event, error) {
	if r.V == Version {
		if ev, ok := decodeDataFast(r.Type, r.Data); ok {
			if v, ok := ev.(validator); ok && v.validate() != nil {
				return r.Decode() // which reports it
			}
			if c, ok := ev.(canonicalizer); ok {
				ev = c.canonical()
			}
			return ev, nil
		}
	}
	return r.Decode()
}

// decodeDataFast decodes data of type t when it is
//
//	OutputDelta: {"turn_id":"…","stream":"…","offset":N,"text":"…"}
//	TurnOutput:  {"turn_id":"…","offset":N,"text":"…","elided":N}
//
// exactly, and reports false for anything else (another type, another
// key order or spelling, white space, a repeated key, a string that is
// not valid JSON or has a UTF-16 surrogate escape, a number that is not
// a JSON integer or does not fit). The values are what encoding/json
// decodes them to: escapes decoded, invalid UTF-8 as U+FFFD.
func decodeDataFast(t Type, data []byte) (Event, bool) {
	var ok bool
	i := 0
	switch t {
	case TypeOutputDelta:
		var o OutputDelta
		if o.TurnID, i, ok = fastMember(data, i, `{"turn_id":`); !ok {
			return nil, false
		}
		if o.Stream, i, ok = fastMember(data, i, `,"stream":`); !ok {
			return nil, false
		}
		if o.Offset, i, ok = fastIntMember(data, i, `,"offset":`); !ok {
			return nil, false
		}
		if o.Text, i, ok = fastText(data, i); !ok {
			return nil, false
		}
		if i != len(data)-1 || data[i] != '}' {
			return nil, false
		}
		return o, true
	case TypeTurnOutput:
		var o TurnOutput
		if o.TurnID, i, ok = fastMember(data, i, `{"turn_id":`); !ok {
			return nil, false
		}
		if o.Offset, i, ok = fastIntMember(data, i, `,"offset":`); !ok {
			return nil, false
		}
		if o.Text, i, ok = fastText(data, i); !ok {
			return nil, false
		}
		if o.Elided, i, ok = fastIntMember(data, i, `,"elided":`); !ok {
			return nil, false
		}
		if i != len(data)-1 || data[i] != '}' {
			return nil, false
		}
		return o, true
	}
	return nil, false
}

// fastText reads the member that spells an output event's text at
// data[i:]: "text", or "text_b64" holding the standard base64 of bytes
// that are not valid UTF-8 (anything else is the strict path's to refuse).
func fastText(data []byte, i int) (string, int, bool) {
	const key = `,"text_b64":"`
	if len(data)-i < len(key) || string(data[i:i+len(key)]) != key {
		return fastMember(data, i, `,"text":`)
	}
	i += len(key)
	j := bytes.IndexByte(data[i:], '"')
	if j < 0 {
		return "", 0, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(string(data[i : i+j]))
	if err != nil || utf8.Valid(b) {
		return "", 0, false
	}
	return string(b), i + j + 1, true
}

// fastIntMember reads key (literal) at data[i:] and the JSON integer
// after it (an int64: no fraction, no exponent, no leading zero); it
// returns the number and the index after it.
func fastIntMember(data []byte, i int, key string) (int64, int, bool) {
	if len(data)-i < len(key) || string(data[i:i+len(key)]) != key {
		return 0, 0, false
	}
	i += len(key)
	j := i
	if j < len(data) && data[j] == '-' {
		j++
	}
	k := j
	for k < len(data) && '0' <= data[k] && data[k] <= '9' {
		k++
	}
	if k == j || data[j] == '0' && k > j+1 {
		return 0, 0, false
	}
	n, err := strconv.ParseInt(string(data[i:k]), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return n, k, true
}

// fastMember reads key (literal) at data[i:] and the JSON string after it;
// it returns the string and the index after it.
func fastMember(data []byte, i int, key string) (string, int, bool) {
	if len(data)-i < len(key) || string(data[i:i+len(key)]) != key {
		return "", 0, false
	}
	return fastString(data, i+len(key))
}

// fastString decodes the JSON string at data[i:] as encoding/json does,
// and returns the index after it. It reports false for what is not a
// JSON string and for surrogate escapes (\ud800-\udfff).
func fastString(data []byte, i int) (string, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return "", 0, false
	}
	i++
	// Plain ASCII up to the closing quote needs no copy but the string's.
	j := i
	for j < len(data) && plainByte[data[j]] {
		j++
	}
	if j < len(data) && data[j] == '"' {
		return string(data[i:j]), j + 1, true
	}
	var b strings.Builder
	b.Grow(len(data) - i)
	start := i
	for j < len(data) {
		for j < len(data) && plainByte[data[j]] {
			j++
		}
		if j >= len(data) {
			break
		}
		switch c := data[j]; {
		case c == '"':
			b.Write(data[start:j])
			return b.String(), j + 1, true
		case c == '\\':
			b.Write(data[start:j])
			if j+1 >= len(data) {
				return "", 0, false
			}
			switch e := data[j+1]; e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := hex4(data, j+2)
				if !ok || 0xd800 <= r && r < 0xe000 {
					return "", 0, false
				}
				b.WriteRune(r)
				j += 4
			default:
				return "", 0, false
			}
			j += 2
			start = j
		case c < 0x20:
			return "", 0, false
		default: // not ASCII
			r, size := utf8.DecodeRune(data[j:])
			if r == utf8.RuneError && size == 1 {
				b.Write(data[start:j])
				b.WriteRune(utf8.RuneError)
				j++
				start = j
				continue
			}
			j += size
		}
	}
	return "", 0, false
}

// plainByte marks the bytes a JSON string holds as they are: ASCII but
// control characters, '"' and '\\'.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// hex4 reads the 4 hex digits of a \u escape at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if len(data)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
