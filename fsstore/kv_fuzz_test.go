package fsstore

import (
	"bytes"
	"testing"
)

// FuzzDecodeKV feeds arbitrary bytes to the decoder of KV files (the
// session catalog on disk). It must never panic, must not trust the
// length field beyond the bytes it has, and every value it accepts must
// be the tail of its input, checksummed, and survive a re-encoding.
func FuzzDecodeKV(f *testing.F) {
	f.Add(encodeKV(1, []byte(`{"v":1}`)))
	f.Add(encodeKV(18446744073709551615, nil))
	f.Add(encodeKV(7, bytes.Repeat([]byte{0}, 300)))
	for _, s := range []string{
		"", "\n", "lrkv1", "lrkv1 1 0 00000000\n", "lrkv1 0 0 00000000\n", "lrkv1 1 5 00000000\nab",
		"lrkv1 1 -1 00000000\n", "lrkv1 1 9223372036854775807 00000000\nx", "lrkv2 1 0 00000000\n",
		"lrkv1  1\t0 00000000 \n", "lrkv1 1 0 0000000000000000000\n", "lrkv1 +1 +0 0\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rev, value, err := decodeKV(b)
		if err != nil {
			return
		}
		if rev == 0 {
			t.Fatal("accepted revision 0")
		}
		if !bytes.HasSuffix(b, value) || len(value) >= len(b) {
			t.Fatalf("value of %d bytes is not the tail of %d input bytes", len(value), len(b))
		}
		rev2, value2, err := decodeKV(encodeKV(rev, value))
		if err != nil || rev2 != rev || !bytes.Equal(value2, value) {
			t.Fatalf("re-encoding of (%d, %q) decodes to (%d, %q), %v", rev, value, rev2, value2, err)
		}
	})
}
