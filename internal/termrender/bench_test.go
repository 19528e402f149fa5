package termrender

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"looprig/internal/textsafe"
)

// seqOutput is the output of `seq 2000000` (about 14 MB).
var seqOutput = sync.OnceValue(func() string {
	var b strings.Builder
	for i := 1; i <= 2_000_000; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
})

// colorOutput is about 8 MB of coloured output, in the shapes real
// commands produce: `git log --color --stat -p`, `ls --color -l`,
// `grep --color`, a compiler's diagnostics (bold, 256 colours), a
// truecolor gradient, and `\r` progress bars.
var colorOutput = sync.OnceValue(func() string {
	var b strings.Builder
	for i := 0; b.Len() < 8<<20; i++ {
		fmt.Fprintf(&b, "\x1b[33mcommit %040x\x1b[m\x1b[33m (\x1b[m\x1b[1;36mHEAD -> \x1b[m\x1b[1;32mmain\x1b[m\x1b[33m)\x1b[m\n", i*7919)
		b.WriteString("Author: Someone <someone@example.com>\nDate:   Tue Dec 1 05:40:23 2026 +0000\n\n    fix the thing in the place\n\n")
		b.WriteString(" internal/x/file.go | 12 \x1b[32m++++++++\x1b[m\x1b[31m----\x1b[m\n")
		b.WriteString("\x1b[1mdiff --git a/internal/x/file.go b/internal/x/file.go\x1b[m\n\x1b[36m@@ -10,7 +10,11 @@\x1b[m func f() {\n")
		for k := 0; k < 6; k++ {
			fmt.Fprintf(&b, "\x1b[31m-\tif err := call(%d); err != nil {\x1b[m\n\x1b[32m+\tif err := call(ctx, %d); err != nil {\x1b[m\n \t\treturn err\n", k, k)
		}
		fmt.Fprintf(&b, "-rw-r--r-- 1 user user  %5d Dec  1 05:40 \x1b[0m\x1b[01;34mdir%d\x1b[0m\n", i%99999, i)
		fmt.Fprintf(&b, "-rwxr-xr-x 1 user user  %5d Dec  1 05:40 \x1b[01;32mrun%d.sh\x1b[0m\n", i%77777, i)
		fmt.Fprintf(&b, "\x1b[35msrc/main.go\x1b[m\x1b[36m:\x1b[m\x1b[32m%d\x1b[m\x1b[36m:\x1b[m\tfmt.\x1b[1;31mPrintln\x1b[m(\"hello\")\n", i%500)
		fmt.Fprintf(&b, "\x1b[1m\x1b[38;5;9merror[E0308]\x1b[0m\x1b[1m: mismatched types\x1b[0m\n  \x1b[1m\x1b[38;5;12m--> \x1b[0msrc/lib.rs:%d:5\n", i%900)
		for k := 0; k < 40; k += 4 {
			fmt.Fprintf(&b, "\x1b[38;2;%d;%d;200m█", (k*6+i)%256, 255-k*6)
		}
		b.WriteString("\x1b[0m\n")
		for p := 0; p <= 100; p += 25 {
			fmt.Fprintf(&b, "\r\x1b[K%3d%% [%-20s]", p, strings.Repeat("=", p/5))
		}
		b.WriteString("\n")
	}
	return b.String()
})

// BenchmarkRender compares the renderer with textsafe.Sanitize, the
// baseline, on plain output (seq) and on coloured output; MB/s is the
// figure to read.
func BenchmarkRender(b *testing.B) {
	for _, in := range []struct {
		name string
		data func() string
	}{{"seq", seqOutput}, {"color", colorOutput}} {
		data := in.data()
		b.Run(in.name+"/textsafe", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				_ = textsafe.Sanitize(data)
			}
		})
		for _, p := range []struct {
			name string
			p    Profile
		}{{"NoColor", NoColor}, {"ANSI256", ANSI256}, {"TrueColor", TrueColor}} {
			b.Run(in.name+"/String-"+p.name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					_ = String(data, p.p)
				}
			})
		}
		// As a view would: 32 KiB chunks, Final drained after each.
		b.Run(in.name+"/stream-ANSI256", func(b *testing.B) {
			raw := []byte(data)
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				r := New(Options{Profile: ANSI256})
				n := 0
				for off := 0; off < len(raw); off += 32 << 10 {
					r.Write(raw[off:min(off+32<<10, len(raw))])
					n += len(r.Final())
				}
				n += len(r.Flush())
				_ = n
			}
		})
	}
}
