package storage

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	valid := []string{
		"a", "0", "sessions/6f1c0c7e-1d2a-4b8e-9f00-123456789abc", "sessions/x/catalog",
		"workspace-roots/" + strings.Repeat("ab", 32), "a_b.c-d/e", strings.Repeat("a", MaxSegmentLen),
		strings.Repeat(strings.Repeat("b", MaxSegmentLen-1)+"/", 3) + strings.Repeat("b", MaxSegmentLen-1) + "c",
	}
	for _, n := range valid {
		if err := ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", n, err)
		}
	}
	invalid := []string{
		"", "/", "/a", "a/", "a//b", "A", "a/B", "a b", "a..b", "../a", "a/../b", ".a", "a/.b",
		"_a", "-a", "a/-b", "a\x00", "a\\b", "é", strings.Repeat("a", MaxSegmentLen+1), "a/./b",
		strings.Repeat(strings.Repeat("b", MaxSegmentLen-1)+"/", 5) + "c",
	}
	for _, n := range invalid {
		err := ValidateName(n)
		var inv *InvalidNameError
		if !errors.As(err, &inv) {
			t.Errorf("ValidateName(%q) = %v, want *InvalidNameError", n, err)
			continue
		}
		if inv.Name != n || inv.Reason == "" {
			t.Errorf("ValidateName(%q) error fields = %+v", n, inv)
		}
	}
}

func TestNameHelpersAreValid(t *testing.T) {
	id := "6f1c0c7e-1d2a-4b8e-9f00-123456789abc"
	for _, n := range []string{SessionName(id), CatalogKey(id), RootLeaseName(strings.Repeat("0f", 32))} {
		if err := ValidateName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
}

func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"a", "sessions/x", "a..b", "A", "a//b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if ValidateName(name) != nil {
			return
		}
		// Every accepted name is safe to join under a directory.
		if strings.Contains(name, "..") || strings.HasPrefix(name, "/") || strings.Contains(name, "//") ||
			strings.ContainsAny(name, "\\\x00") || len(name) > MaxNameLen {
			t.Fatalf("accepted unsafe name %q", name)
		}
		for _, seg := range strings.Split(name, "/") {
			if seg == "" || seg == "." || seg[0] == '.' {
				t.Fatalf("accepted bad segment in %q", name)
			}
		}
	})
}

func TestSessionOfLease(t *testing.T) {
	const id = "0b9e3a4e-1111-4222-8333-444455556666"
	for _, tt := range []struct {
		name string
		id   string
		ok   bool
	}{
		{SessionName(id), id, true},
		{CatalogKey(id), "", false},
		{RootLeaseName("ab12"), "", false},
		{SessionName(""), "", false},
		{"other/" + id, "", false},
	} {
		if got, ok := SessionOfLease(tt.name); got != tt.id || ok != tt.ok {
			t.Errorf("SessionOfLease(%q) = %q, %v; want %q, %v", tt.name, got, ok, tt.id, tt.ok)
		}
	}
}
