package termrender

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"looprig/internal/textsafe"
)

// validate returns an error unless out holds only what this package may
// emit for profile p: printable text, '\n', and SGR sequences of exactly
// the documented shape (ESC [ P (; P)* m) with codes the profile allows,
// each line starting with no attributes and ending with them reset.
func validate(out string, p Profile) error {
	active := false // attributes set on the current line
	for i := 0; i < len(out); {
		c := out[i]
		switch {
		case c == '\n':
			if active {
				return fmt.Errorf("offset %d: line ends with attributes set", i)
			}
			i++
		case c == 0x1b:
			if p == NoColor {
				return fmt.Errorf("offset %d: escape sequence under NoColor", i)
			}
			n, reset, err := validSGR(out[i:], p, active)
			if err != nil {
				return fmt.Errorf("offset %d: %v in %q", i, err, clip(out[i:]))
			}
			active = !reset
			i += n
		case c < 0x20 || c == 0x7f:
			return fmt.Errorf("offset %d: control byte %#x", i, c)
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRuneInString(out[i:])
			if r == utf8.RuneError && n == 1 {
				return fmt.Errorf("offset %d: invalid UTF-8", i)
			}
			if !textsafe.Safe(out[i : i+n]) {
				return fmt.Errorf("offset %d: unsafe rune %U", i, r)
			}
			i += n
		}
	}
	if active {
		return fmt.Errorf("output ends with attributes set")
	}
	return nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

// validSGR checks the SGR sequence at the start of s and returns its
// length and whether it resets to no attributes.
func validSGR(s string, p Profile, active bool) (int, bool, error) {
	if !strings.HasPrefix(s, "\x1b[") {
		return 0, false, fmt.Errorf("ESC not followed by [")
	}
	end := strings.IndexByte(s, 'm')
	if end < 0 {
		return 0, false, fmt.Errorf("unterminated sequence")
	}
	body := s[2:end]
	for j := 0; j < len(body); j++ {
		if (body[j] < '0' || body[j] > '9') && body[j] != ';' {
			return 0, false, fmt.Errorf("byte %q in SGR", body[j])
		}
	}
	toks := strings.Split(body, ";")
	nums := make([]int, len(toks))
	for j, t := range toks {
		if t == "" || (len(t) > 1 && t[0] == '0') {
			return 0, false, fmt.Errorf("parameter %q", t)
		}
		v, err := strconv.Atoi(t)
		if err != nil {
			return 0, false, err
		}
		nums[j] = v
	}
	if len(nums) == 1 && nums[0] == 0 {
		if !active {
			return 0, false, fmt.Errorf("reset with no attributes set")
		}
		return end + 1, true, nil
	}
	k := 0
	if nums[0] == 0 {
		if !active {
			return 0, false, fmt.Errorf("reset-and-set with no attributes set")
		}
		k = 1
	} else if active {
		return 0, false, fmt.Errorf("set without reset over attributes")
	}
	if k == len(nums) {
		return 0, false, fmt.Errorf("no attribute")
	}
	// Flags in increasing order, then one foreground, then one background.
	last := 0
	for k < len(nums) && strings.Contains(",1,2,3,4,5,7,9,", ","+strconv.Itoa(nums[k])+",") {
		if nums[k] <= last {
			return 0, false, fmt.Errorf("flags out of order")
		}
		last = nums[k]
		k++
	}
	var err error
	k, err = validColor(nums, k, 30, 90, 38, p)
	if err != nil {
		return 0, false, err
	}
	k, err = validColor(nums, k, 40, 100, 48, p)
	if err != nil {
		return 0, false, err
	}
	if k != len(nums) {
		return 0, false, fmt.Errorf("unexpected parameter %d", nums[k])
	}
	return end + 1, false, nil
}

func validColor(nums []int, k, base, bright, ext int, p Profile) (int, error) {
	if k >= len(nums) {
		return k, nil
	}
	v := nums[k]
	switch {
	case v >= base && v <= base+7, v >= bright && v <= bright+7:
		return k + 1, nil
	case v != ext:
		return k, nil
	}
	if k+1 >= len(nums) {
		return 0, fmt.Errorf("%d without kind", ext)
	}
	switch nums[k+1] {
	case 5:
		if p < ANSI256 {
			return 0, fmt.Errorf("256 colours under profile %d", p)
		}
		if k+2 >= len(nums) || nums[k+2] < 16 || nums[k+2] > 255 {
			return 0, fmt.Errorf("bad %d;5 colour", ext)
		}
		return k + 3, nil
	case 2:
		if p < TrueColor {
			return 0, fmt.Errorf("truecolor under profile %d", p)
		}
		if k+4 >= len(nums) {
			return 0, fmt.Errorf("short %d;2 colour", ext)
		}
		for _, c := range nums[k+2 : k+5] {
			if c > 255 {
				return 0, fmt.Errorf("bad %d;2 colour", ext)
			}
		}
		return k + 5, nil
	}
	return 0, fmt.Errorf("bad colour kind %d", nums[k+1])
}

// TestValidate: the validator accepts what the package emits and rejects
// anything else.
func TestValidate(t *testing.T) {
	good := []struct {
		s string
		p Profile
	}{
		{"plain\ntext 日本", NoColor},
		{"\x1b[31mred\x1b[0m plain", ANSI},
		{"\x1b[1;2;3;4;5;7;9;91;104mx\x1b[0;31mx\x1b[0m\n", ANSI},
		{"\x1b[38;5;208;48;5;16mx\x1b[0m", ANSI256},
		{"\x1b[38;2;0;10;255;48;2;1;2;3mx\x1b[0m", TrueColor},
	}
	for _, g := range good {
		if err := validate(g.s, g.p); err != nil {
			t.Errorf("validate(%q, %d) = %v, want nil", g.s, g.p, err)
		}
	}
	bad := []struct {
		s string
		p Profile
	}{
		{"\x1b[31mx\x1b[0m", NoColor},       // escape under NoColor
		{"\x1b[2J", ANSI},                   // not SGR
		{"\x1b[?1049h", ANSI},               // mode switch
		{"\x1b]52;c;QQ==\x07", ANSI},        // OSC
		{"\x1b[31mred", ANSI},               // no reset at the end
		{"\x1b[31mred\nx\x1b[0m", ANSI},     // no reset at the end of the line
		{"\x1b[0m", ANSI},                   // reset of nothing
		{"\x1b[31mx\x1b[32mx\x1b[0m", ANSI}, // set over attributes without 0
		{"\x1b[1;31mx\x1b[0m\x1b[mx", ANSI}, // empty SGR
		{"\x1b[3;1mx\x1b[0m", ANSI},         // flags out of order
		{"\x1b[38;5;3mx\x1b[0m", ANSI256},   // 0-15 must be 30-37/90-97
		{"\x1b[38;5;208mx\x1b[0m", ANSI},    // 256 colours under ANSI
		{"\x1b[38;2;1;2;3mx\x1b[0m", ANSI256},
		{"\x1b[38:5:208mx\x1b[0m", TrueColor}, // colon form
		{"\x1b[8mx\x1b[0m", ANSI},             // conceal
		{"\x1b[01mx\x1b[0m", ANSI},            // leading zero
		{"a\x07b", NoColor},
		{"a\rb", NoColor},
		{"a\tb", NoColor},
		{"a\x7fb", NoColor},
		{"a\u009bb", NoColor},
		{"a\u202eb", NoColor},
		{"a\u2028b", NoColor},
		{"a\xffb", NoColor},
	}
	for _, b := range bad {
		if err := validate(b.s, b.p); err == nil {
			t.Errorf("validate(%q, %d) = nil, want an error", b.s, b.p)
		}
	}
}
