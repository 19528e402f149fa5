package main

import (
	"strings"
	"testing"
)

func TestParseAndMedian(t *testing.T) {
	in := `goos: linux
BenchmarkLease-2   	       1	 590310822 ns/op	       376.1 base-us	       848.7 ours-us	         2.257 x-raw
BenchmarkLease-2   	       1	 590310822 ns/op	       300.0 base-us	       900.0 ours-us	         3.000 x-raw
BenchmarkLease-2   	       1	 590310822 ns/op	       400.0 base-us	       800.0 ours-us	         2.000 x-raw
BenchmarkView-2    	    1000	     98765 ns/op	  1234 B/op
PASS
`
	vals, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := median(vals[metric{"BenchmarkLease", "x-raw"}]); got != 2.257 {
		t.Errorf("median x-raw = %v", got)
	}
	if got := vals[metric{"BenchmarkView", "ns/op"}]; len(got) != 1 || got[0] != 98765 {
		t.Errorf("View ns/op = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of an even count = %v", got)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		v          float64
		kind, want string
	}{
		{250, "us", "250 µs"}, {12500, "us", "12.50 ms"}, {0.5, "ms", "0.5 ms"}, {1500, "ms", "1.50 s"},
		{98765, "ns", "98.8 µs"}, {20500, "rate", "20.5k/s"}, {7.5, "n", "7.50"}, {12, "n", "12"},
	} {
		if got := format(c.v, c.kind); got != c.want {
			t.Errorf("format(%v, %s) = %q, want %q", c.v, c.kind, got, c.want)
		}
	}
}
