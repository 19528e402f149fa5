package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	payloads := [][]byte{
		nil,
		{},
		[]byte("x"),
		[]byte("hello, ledger"),
		bytes.Repeat([]byte{0xA5}, 4096),
		bytes.Repeat([]byte("LRf1"), 1000), // payload full of magic
		bytes.Repeat([]byte{7}, MaxPayload),
	}
	var buf []byte
	for i, p := range payloads {
		seq, epoch := uint64(i+1), uint64(1000+i)
		buf = AppendFrame(buf[:0], seq, epoch, p)
		if len(buf) != Size(len(p)) {
			t.Fatalf("frame %d: encoded %d bytes, want %d", i, len(buf), Size(len(p)))
		}
		f, n, err := Decode(buf)
		if err != nil {
			t.Fatalf("frame %d: Decode: %v", i, err)
		}
		if n != len(buf) || f.Seq != seq || f.Epoch != epoch || !bytes.Equal(f.Payload, p) {
			t.Fatalf("frame %d: got seq=%d epoch=%d n=%d len=%d", i, f.Seq, f.Epoch, n, len(f.Payload))
		}
		// Appending to the payload must not clobber the checksum.
		if cap(f.Payload) != len(f.Payload) {
			t.Fatalf("frame %d: payload cap %d exceeds len %d", i, cap(f.Payload), len(f.Payload))
		}
	}
}

func TestSequenceOfFrames(t *testing.T) {
	var buf []byte
	for i := 1; i <= 100; i++ {
		buf = AppendFrame(buf, uint64(i), 7, bytes.Repeat([]byte{byte(i)}, i))
	}
	b := buf
	for i := 1; i <= 100; i++ {
		f, n, err := Decode(b)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if f.Seq != uint64(i) || f.Epoch != 7 || len(f.Payload) != i || f.Payload[0] != byte(i) {
			t.Fatalf("record %d: got %+v", i, f)
		}
		b = b[n:]
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes left", len(b))
	}
}

func TestLayout(t *testing.T) {
	b := AppendFrame(nil, 0x0102030405060708, 0x1112131415161718, []byte("ab"))
	want := []byte("LRf1")
	want = binary.LittleEndian.AppendUint32(want, 2)
	want = binary.LittleEndian.AppendUint64(want, 0x0102030405060708)
	want = binary.LittleEndian.AppendUint64(want, 0x1112131415161718)
	want = append(want, "ab"...)
	if !bytes.Equal(b[:len(want)], want) {
		t.Fatalf("header layout:\n got %x\nwant %x", b[:len(want)], want)
	}
	if HeaderSize != 24 || Overhead != 28 || len(b) != 30 {
		t.Fatalf("sizes: header %d overhead %d frame %d", HeaderSize, Overhead, len(b))
	}
}

func TestAppendFrameNoAlloc(t *testing.T) {
	p := make([]byte, 256)
	dst := make([]byte, 0, Size(len(p)))
	allocs := testing.AllocsPerRun(100, func() {
		dst = AppendFrame(dst[:0], 1, 1, p)
	})
	if allocs != 0 {
		t.Fatalf("AppendFrame allocated %v times with capacity available", allocs)
	}
}

func TestAppendFrameTooLargePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for payload over MaxPayload")
		}
	}()
	AppendFrame(nil, 1, 1, make([]byte, MaxPayload+1))
}

func TestDecodeErrors(t *testing.T) {
	good := AppendFrame(nil, 3, 4, []byte("payload"))

	// Every proper prefix of a good frame is incomplete, never anything else.
	for i := 0; i < len(good); i++ {
		if _, n, err := Decode(good[:i]); !errors.Is(err, ErrIncomplete) || n != 0 {
			t.Fatalf("prefix %d: err=%v n=%d, want ErrIncomplete", i, err, n)
		}
	}

	badMagic := bytes.Clone(good)
	badMagic[1] = 'X'
	if _, _, err := Decode(badMagic); !errors.Is(err, ErrBadMagic) {
		t.Fatalf("bad magic: %v", err)
	}
	// A short prefix that already disagrees with the magic is bad, not incomplete.
	if _, _, err := Decode([]byte("LX")); !errors.Is(err, ErrBadMagic) {
		t.Fatalf("short bad magic: %v", err)
	}
	if _, _, err := Decode(make([]byte, 3)); !errors.Is(err, ErrBadMagic) {
		t.Fatalf("zeros: %v", err)
	}

	// An oversized length is refused even when only the header is present,
	// and even when only the length field is.
	huge := bytes.Clone(good[:HeaderSize])
	binary.LittleEndian.PutUint32(huge[4:8], MaxPayload+1)
	if _, _, err := Decode(huge); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge length: %v", err)
	}
	if _, _, err := Decode(huge[:8]); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge length, short: %v", err)
	}
	binary.LittleEndian.PutUint32(huge[4:8], 0xFFFFFFFF)
	if _, err := DecodeHeader(huge); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("max uint32 length: %v", err)
	}

	// A flip anywhere after the magic and length (seq, epoch, payload, crc)
	// is a checksum mismatch.
	for i := 8; i < len(good); i++ {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		if _, _, err := Decode(b); !errors.Is(err, ErrChecksum) {
			t.Fatalf("flip at %d: %v", i, err)
		}
	}

	// Trailing bytes after a frame are not the frame's business.
	long := append(bytes.Clone(good), "trailing garbage"...)
	if _, n, err := Decode(long); err != nil || n != len(good) {
		t.Fatalf("trailing bytes: n=%d err=%v", n, err)
	}
}

func TestDecodeMaxPayloadBoundary(t *testing.T) {
	b := AppendFrame(nil, 1, 1, make([]byte, MaxPayload))
	if _, n, err := Decode(b); err != nil || n != MaxSize {
		t.Fatalf("max payload: n=%d err=%v", n, err)
	}
}

func TestDecodeNoAlloc(t *testing.T) {
	good := AppendFrame(nil, 1, 1, make([]byte, 512))
	huge := bytes.Clone(good[:HeaderSize])
	binary.LittleEndian.PutUint32(huge[4:8], 0xFFFFFFFF)
	allocs := testing.AllocsPerRun(100, func() {
		Decode(good)
		Decode(huge)
		Decode(good[:100])
	})
	if allocs != 0 {
		t.Fatalf("Decode allocated %v times", allocs)
	}
}

func BenchmarkAppendFrame256(b *testing.B) {
	p := make([]byte, 256)
	dst := make([]byte, 0, Size(len(p)))
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		dst = AppendFrame(dst[:0], 1, 1, p)
	}
}

func BenchmarkDecode256(b *testing.B) {
	buf := AppendFrame(nil, 1, 1, make([]byte, 256))
	b.SetBytes(256)
	for b.Loop() {
		if _, _, err := Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}
