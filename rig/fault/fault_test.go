package fault_test

import (
	"strings"
	"testing"

	"looprig/rig/fault"
)

// snakeCase reports whether name is a non-empty snake_case word.
func snakeCase(name string) bool {
	return name != "" && name == strings.ToLower(name) && !strings.ContainsAny(name, "- ()")
}

func TestRemedyNames(t *testing.T) {
	seen := map[string]fault.Remedy{}
	for _, r := range fault.Remedies() {
		name := r.String()
		if !snakeCase(name) {
			t.Errorf("Remedy %d has name %q, want snake_case", int(r), name)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("Remedies %d and %d are both %q", int(other), int(r), name)
		}
		seen[name] = r
		if back, ok := fault.ParseRemedy(name); !ok || back != r {
			t.Errorf("ParseRemedy(%q) = %v, %v; want %d", name, back, ok, int(r))
		}
	}
	if got := fault.Remedy(999).String(); got != "remedy(999)" {
		t.Errorf("an unknown remedy is %q", got)
	}
	if r, ok := fault.ParseRemedy("no_such_remedy"); ok || r != fault.RemedyNone {
		t.Errorf("ParseRemedy of an unknown name = %v, %v", r, ok)
	}
}

// TestKindNames: every kind has its own snake_case wire name, which
// ParseKind reads back, and a type of its own (none but KindError is
// unclassified); every type is some kind's.
func TestKindNames(t *testing.T) {
	seen := map[string]fault.Kind{}
	typed := map[fault.Type]bool{}
	for _, k := range fault.Kinds() {
		name := k.String()
		if !snakeCase(name) {
			t.Errorf("Kind %d has name %q, want snake_case", int(k), name)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("Kinds %d and %d are both %q", int(other), int(k), name)
		}
		seen[name] = k
		if back, ok := fault.ParseKind(name); !ok || back != k {
			t.Errorf("ParseKind(%q) = %v, %v; want %d", name, back, ok, int(k))
		}
		if (k.Type() == fault.TypeError) != (k == fault.KindError) {
			t.Errorf("kind %s has type %s", k, k.Type())
		}
		if x := fault.Of(k); x.Type != k.Type() || x.Kind != k || x.Remedy != k.Remedy() || x.Classified() != (k != fault.KindError) {
			t.Errorf("Of(%s) = %+v", k, x)
		}
		typed[k.Type()] = true
	}
	if got := fault.Kind(250).String(); got != "kind(250)" {
		t.Errorf("an unknown kind is %q", got)
	}
	if k, ok := fault.ParseKind("no_such_kind"); ok || k != fault.KindError {
		t.Errorf("ParseKind of an unknown name = %v, %v", k, ok)
	}

	names := map[string]fault.Type{}
	for _, typ := range fault.Types() {
		name := typ.String()
		if name == "" || name != strings.TrimSpace(name) || strings.ToUpper(name[:1]) != name[:1] || !strings.HasSuffix(name, "Error") {
			t.Errorf("Type %d has name %q, want a Go error type's", int(typ), name)
		}
		if other, dup := names[name]; dup {
			t.Errorf("Types %d and %d are both %q", int(other), int(typ), name)
		}
		names[name] = typ
		if back, ok := fault.ParseType(name); !ok || back != typ {
			t.Errorf("ParseType(%q) = %v, %v; want %d", name, back, ok, int(typ))
		}
		if !typed[typ] {
			t.Errorf("type %s is no kind's", typ)
		}
	}
	if got := fault.Type(250).String(); got != "type(250)" {
		t.Errorf("an unknown type is %q", got)
	}
	if typ, ok := fault.ParseType("NoSuchError"); ok || typ != fault.TypeError {
		t.Errorf("ParseType of an unknown name = %v, %v", typ, ok)
	}
}

func TestNumber(t *testing.T) {
	x := fault.Of(fault.KindLeaseLost, fault.Field{Name: "epoch", Value: uint64(3)}, fault.Field{Name: "index", Value: 4},
		fault.Field{Name: "offset", Value: int64(-1)}, fault.Field{Name: "reason", Value: "replaced"})
	for name, want := range map[string]int64{"epoch": 3, "index": 4, "offset": -1} {
		if n, ok := x.Number(name); !ok || n != want {
			t.Errorf("Number(%s) = %d, %v; want %d", name, n, ok, want)
		}
	}
	for _, name := range []string{"reason", "absent"} {
		if n, ok := x.Number(name); ok {
			t.Errorf("Number(%s) = %d, true", name, n)
		}
	}
}
