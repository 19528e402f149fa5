package themes

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestBuiltinsAreCompleteAndValid(t *testing.T) {
	bs := Builtins()
	if len(bs) < 4 {
		t.Fatalf("%d built-ins, want at least 4", len(bs))
	}
	if bs[0].Name != Default {
		t.Fatalf("first built-in is %q, want the default %q", bs[0].Name, Default)
	}
	seen := map[string]bool{}
	for _, th := range bs {
		if seen[th.Name] {
			t.Errorf("duplicate theme %q", th.Name)
		}
		seen[th.Name] = true
		if err := th.Validate(); err != nil {
			t.Errorf("%s: %v", th.Name, err)
		}
		for _, tok := range Tokens {
			c := th.Get(tok)
			if c.TrueColor == "" || c.ANSI256 == "" || c.ANSI16 == "" {
				t.Errorf("%s: token %s lacks a value: %+v", th.Name, tok, c)
			}
		}
	}
	for _, want := range []string{"dark", "light", "high-contrast", "ansi"} {
		if !seen[want] {
			t.Errorf("no built-in %q", want)
		}
	}
	if th, _ := Lookup("light"); th.Dark {
		t.Error("light theme claims a dark background")
	}
}

func TestANSIThemeUsesOnlyThe16Colours(t *testing.T) {
	th, err := Lookup("ansi")
	if err != nil {
		t.Fatal(err)
	}
	for tok, c := range th.Colors {
		for _, v := range []string{c.TrueColor, c.ANSI256, c.ANSI16} {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 15 {
				t.Errorf("%s = %q: not one of the 16 ANSI colours", tok, v)
			}
		}
	}
}

func TestStatesAreDistinctInEveryTheme(t *testing.T) {
	states := []Token{StateLive, StateHeld, StateIdle, StateCrashed, StateBroken}
	for _, th := range Builtins() {
		for _, depth := range []func(Color) string{
			func(c Color) string { return c.TrueColor },
			func(c Color) string { return c.ANSI16 },
		} {
			seen := map[string]Token{}
			for _, s := range states {
				v := depth(th.Get(s))
				if other, dup := seen[v]; dup {
					t.Errorf("%s: %s and %s share colour %s", th.Name, s, other, v)
				}
				seen[v] = s
			}
		}
	}
}

func TestLookupUnknownListsKnownNames(t *testing.T) {
	_, err := NewSet().Lookup("solarised")
	var ue *UnknownThemeError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v, want *UnknownThemeError", err)
	}
	for _, n := range []string{"dark", "light", "high-contrast", "ansi"} {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %q", err, n)
		}
	}
}

func TestNextWraps(t *testing.T) {
	s := NewSet()
	names := s.Names()
	cur := names[0]
	for i := 0; i < len(names); i++ {
		cur = s.Next(cur).Name
	}
	if cur != names[0] {
		t.Fatalf("after a full cycle got %q, want %q", cur, names[0])
	}
	if s.Next("nope").Name != names[0] {
		t.Fatal("Next of an unknown name is not the first theme")
	}
}

func TestUserThemesLoadAndOverride(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ocean.toml", `
base = "dark"
[colors]
accent = { truecolor = "#5fafff", ansi256 = 75, ansi16 = "12" }
text = "#d0d0d0 252 7"
`)
	write("broken.toml", `
[colors]
accent = "#5fafff 75"
`)
	write("incomplete.toml", `
name = "incomplete"
[colors]
accent = "#5fafff 75 12"
`)
	write("typo.toml", `
bsae = "dark"
`)
	write("notes.txt", "not a theme")
	got, errs := LoadDir(dir)
	if len(got) != 1 || got[0].Name != "ocean" {
		t.Fatalf("loaded %v, want only ocean", got)
	}
	if len(errs) != 3 {
		t.Fatalf("errors %v, want 3 (broken, incomplete, typo)", errs)
	}
	for _, e := range errs {
		if !strings.Contains(e.Error(), dir) {
			t.Errorf("error %q does not name the file", e)
		}
	}
	o := got[0]
	if c := o.Get(Accent); c.TrueColor != "#5fafff" || c.ANSI256 != "75" || c.ANSI16 != "12" {
		t.Errorf("accent = %+v", c)
	}
	if !o.Dark || o.Get(StateLive) != mustLookup(t, "dark").Get(StateLive) {
		t.Error("base tokens were not inherited")
	}
	s := NewSet(got...)
	if _, err := s.Lookup("ocean"); err != nil {
		t.Fatal(err)
	}
	if n := s.Names(); n[len(n)-1] != "ocean" {
		t.Errorf("user theme not last: %v", n)
	}
	// A user theme named like a built-in replaces it.
	dark := mustLookup(t, "dark")
	dark.Colors[Accent] = Color{"#000000", "0", "0"}
	s = NewSet(dark)
	if th, _ := s.Lookup("dark"); th.Get(Accent).TrueColor != "#000000" {
		t.Error("user theme did not replace the built-in")
	}
	if len(s.Names()) != len(Builtins()) {
		t.Errorf("names %v", s.Names())
	}
}

func TestLoadDirMissingIsEmpty(t *testing.T) {
	got, errs := LoadDir(filepath.Join(t.TempDir(), "nope"))
	if len(got) != 0 || len(errs) != 0 {
		t.Fatalf("got %v %v", got, errs)
	}
}

func TestChoicePersists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	if n, err := LoadChoice(dir); n != "" || err != nil {
		t.Fatalf("fresh choice = %q, %v", n, err)
	}
	if err := SaveChoice(dir, "light"); err != nil {
		t.Fatal(err)
	}
	if n, err := LoadChoice(dir); n != "light" || err != nil {
		t.Fatalf("choice = %q, %v", n, err)
	}
	if err := SaveChoice(dir, "../evil"); err == nil {
		t.Fatal("saved a path as a theme name")
	}
	if err := os.WriteFile(filepath.Join(dir, "theme"), []byte("\x1b]52;c;x\x07"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadChoice(dir); err == nil {
		t.Fatal("accepted garbage as a theme choice")
	}
}

func TestNoColor(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	if NoColor() {
		t.Error("empty NO_COLOR means colour")
	}
	t.Setenv("NO_COLOR", "1")
	if !NoColor() {
		t.Error("NO_COLOR=1 ignored")
	}
}

func mustLookup(t *testing.T, name string) Theme {
	t.Helper()
	th, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return th
}
