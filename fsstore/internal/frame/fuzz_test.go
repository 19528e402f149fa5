package frame

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to Decode. It must never panic, must
// classify every failure as one of the four sentinels, must not allocate
// whatever the length field says, and every frame it accepts must
// re-encode to exactly the bytes it consumed.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("LRf1"))
	f.Add(AppendFrame(nil, 1, 1, nil))
	f.Add(AppendFrame(nil, 1, 1, []byte("hello")))
	f.Add(AppendFrame(AppendFrame(nil, 1, 2, []byte("a")), 2, 2, []byte("b")))
	f.Add(append([]byte("LRf1\xff\xff\xff\xff"), make([]byte, 16)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		var (
			fr  Frame
			n   int
			err error
		)
		allocs := testing.AllocsPerRun(1, func() { fr, n, err = Decode(b) })
		if allocs != 0 {
			t.Fatalf("Decode allocated %v times on %d bytes", allocs, len(b))
		}
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with n=%d", err, n)
			}
			if !errors.Is(err, ErrIncomplete) && !errors.Is(err, ErrBadMagic) &&
				!errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrChecksum) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if n < Overhead || n > len(b) || len(fr.Payload) != n-Overhead || len(fr.Payload) > MaxPayload {
			t.Fatalf("bad sizes: n=%d len(b)=%d payload=%d", n, len(b), len(fr.Payload))
		}
		if re := AppendFrame(nil, fr.Seq, fr.Epoch, fr.Payload); !bytes.Equal(re, b[:n]) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", re, b[:n])
		}
	})
}
