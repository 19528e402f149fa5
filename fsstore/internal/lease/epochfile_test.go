package lease

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"looprig/rig/storage"
)

func TestParseEpochFile(t *testing.T) {
	acq := time.Date(2026, 7, 15, 10, 11, 12, 123456789, time.UTC)
	good := []struct {
		in    string
		epoch uint64
		h     storage.Holder
	}{
		{`{"epoch":1,"pid":42,"host":"h","acquired":"2026-07-15T10:11:12.123456789Z"}`, 1, storage.Holder{PID: 42, Host: "h", Acquired: acq}},
		{"{\"epoch\":18446744073709551615}\n", 1<<64 - 1, storage.Holder{}},
		{`  {"acquired":"","epoch":9,"future":[1,2,{"x":null}]}  `, 9, storage.Holder{}},
		{`{"epoch":3,"pid":null,"host":"h\u00e9"}`, 3, storage.Holder{Host: "hé"}},
		{`{"epoch":4,"pid":7,"started":123456,"boot":"b0"}`, 4, storage.Holder{PID: 7, Started: 123456, Boot: "b0"}},
		{`{"epoch":5,"started":null,"boot":""}`, 5, storage.Holder{}},
	}
	for _, g := range good {
		e, h, err := ParseEpochFile([]byte(g.in))
		if err != nil || e != g.epoch || !sameHolder(h, g.h) {
			t.Errorf("ParseEpochFile(%q) = %d, %+v, %v; want %d, %+v", g.in, e, h, err, g.epoch, g.h)
		}
	}
	bad := []string{
		``, ` `, `null`, `[]`, `"x"`, `{}`, `{"epoch":null}`, `{"epoch":0}`, `{"epoch":-1}`,
		`{"epoch":1.0}`, `{"epoch":1e3}`, `{"epoch":"1"}`, `{"epoch":18446744073709551616}`,
		`{"epoch":1,"pid":-5}`, `{"epoch":1,"pid":1.5}`, `{"epoch":1,"pid":"7"}`, `{"epoch":1,"host":5}`,
		`{"epoch":1,"acquired":"yesterday"}`, `{"epoch":1,"acquired":7}`, `{"epoch":1}x`, `{"epoch":1`,
		`{"epoch":1,"started":-1}`, `{"epoch":1,"started":"5"}`, `{"epoch":1,"started":1.5}`, `{"epoch":1,"boot":5}`,
		`{"epoch":1,"boot":"` + string(bytes.Repeat([]byte("b"), maxBootIDLen+1)) + `"}`,
		"\xff\xfe", string(bytes.Repeat([]byte(" "), MaxEpochFileSize)) + `{"epoch":1}`,
	}
	for _, b := range bad {
		if e, h, err := ParseEpochFile([]byte(b)); err == nil {
			t.Errorf("ParseEpochFile(%.60q) = %d, %+v; want an error", b, e, h)
		}
	}
}

func TestFormatEpochFileRoundTrip(t *testing.T) {
	for _, h := range []storage.Holder{
		{PID: 9, Host: "a \"quoted\" host\n", Acquired: time.Now()},
		{PID: 9, Host: "h", Acquired: time.Now(), Started: 1 << 40, Boot: "5d3c9a0e-0b6f-4c1e-9a43-2f0c1b7d8e6a"},
	} {
		b := formatEpochFile(12, h)
		e, got, err := ParseEpochFile(b)
		if err != nil || e != 12 || !sameHolder(got, h) {
			t.Fatalf("round trip of %s: %d %+v %v", b, e, got, err)
		}
		if h.Started == 0 && bytes.Contains(b, []byte(`"started"`)) {
			t.Errorf("a holder without a start is written with one: %s", b)
		}
	}
}

// sameHolder compares holders, their times with Equal.
func sameHolder(a, b storage.Holder) bool {
	return a.PID == b.PID && a.Host == b.Host && a.Acquired.Equal(b.Acquired) && a.Started == b.Started && a.Boot == b.Boot
}

func TestWriteEpochFileIsAtomicAndPrivate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.epoch")
	for i := uint64(1); i <= 3; i++ {
		if err := writeEpochFile(p, -1, i, storage.Holder{PID: 1}); err != nil {
			t.Fatal(err)
		}
		e, _, err := readEpochFile("x", p)
		if err != nil || e != i {
			t.Fatalf("read back %d, %v; want %d", e, err, i)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temp files left: %v", entries)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

// FuzzParseEpochFile: the parser never panics, accepts only epochs >= 1,
// and whatever it accepts survives a format/parse round trip.
func FuzzParseEpochFile(f *testing.F) {
	f.Add([]byte(`{"epoch":1,"pid":42,"host":"h","acquired":"2026-07-15T10:11:12.123456789Z"}`))
	f.Add(formatEpochFile(7, storage.Holder{PID: 1, Host: "x", Acquired: time.Unix(0, 0)}))
	f.Add(formatEpochFile(8, storage.Holder{PID: 2, Host: "y", Acquired: time.Unix(0, 0), Started: 99, Boot: "b"}))
	f.Add([]byte(`{"epoch":18446744073709551615}`))
	f.Add([]byte(`{"epoch":0}`))
	f.Add([]byte(`garbage`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, h, err := ParseEpochFile(data)
		if err != nil {
			return
		}
		if e == 0 || h.PID < 0 || len(data) > MaxEpochFileSize {
			t.Fatalf("accepted %q as epoch %d holder %+v", data, e, h)
		}
		e2, h2, err := ParseEpochFile(formatEpochFile(e, h))
		if err != nil || e2 != e || !sameHolder(h2, h) {
			t.Fatalf("round trip of %q: %d %+v %v, want %d %+v", data, e2, h2, err, e, h)
		}
	})
}
