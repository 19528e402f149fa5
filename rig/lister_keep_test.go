package rig

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// A kept listing is taken only when it is whole, of this format, listed
// at the same durable stamp on this machine, and younger than the bound;
// anything else is listed again, never an error.
func TestKeptListingRefusals(t *testing.T) {
	dir := t.TempDir()
	l := &Lister{host: "this-host", keepPath: filepath.Join(dir, "cache", "listing.json")}
	infos := []SessionInfo{{ID: "a", Title: "one", State: StateIdle, Epoch: 3}}
	now := time.Now()
	if err := l.saveKept("s1", now, infos); err != nil {
		t.Fatal(err)
	}
	got, listed, ok := l.loadKept("s1", time.Minute)
	if !ok || len(got) != 1 || got[0].Title != "one" || got[0].Epoch != 3 || !listed.Equal(now) {
		t.Fatalf("loadKept of what was saved = %+v, %v, %v", got, listed, ok)
	}
	if fi, err := os.Stat(l.keepPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the kept file: %v %v, want mode 0600", fi, err)
	}
	for _, c := range []struct {
		what   string
		stamp  string
		bound  time.Duration
		mangle func()
	}{
		{"another stamp", "s2", time.Minute, nil},
		{"no stamp", "", time.Minute, nil},
		{"older than the bound", "s1", time.Nanosecond, nil},
		{"another machine's", "s1", time.Minute, func() {
			other := &Lister{host: "other-host", keepPath: l.keepPath}
			if err := other.saveKept("s1", now, infos); err != nil {
				t.Fatal(err)
			}
		}},
		{"cut short", "s1", time.Minute, func() {
			l.saveKept("s1", now, infos)
			b, _ := os.ReadFile(l.keepPath)
			os.WriteFile(l.keepPath, b[:len(b)/2], 0o600)
		}},
		{"of another format", "s1", time.Minute, func() {
			os.WriteFile(l.keepPath, []byte(`{"v":2,"stamp":"s1","host":"this-host","listed":"`+now.Format(time.RFC3339Nano)+`","sessions":[]}`), 0o600)
		}},
	} {
		if c.mangle != nil {
			c.mangle()
		}
		if got, _, ok := l.loadKept(c.stamp, c.bound); ok {
			t.Errorf("%s: loadKept = %+v, want nothing", c.what, got)
		}
	}
}

// fill sets every settable field of v, recursively, to a value that is
// not its zero: a row whose every field says something.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("s-" + v.Type().Name())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(9)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 3, 22, 0, 0, 123456789, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				fill(v.Field(i))
			}
		}
	}
}

// A kept row comes back as it was listed, every field of it: the file
// is the listing, not a summary of it.
func TestKeptListingWholeRows(t *testing.T) {
	var in SessionInfo
	fill(reflect.ValueOf(&in).Elem())
	l := &Lister{host: "this-host", keepPath: filepath.Join(t.TempDir(), "listing.json")}
	if err := l.saveKept("s1", time.Now(), []SessionInfo{in}); err != nil {
		t.Fatal(err)
	}
	got, _, ok := l.loadKept("s1", time.Minute)
	if !ok || len(got) != 1 || !reflect.DeepEqual(got[0], in) {
		t.Fatalf("kept row:\n got %+v\nwant %+v", got, in)
	}
}
