// Package frame encodes and decodes the records of a looprig ledger file.
//
// A frame is a fixed header, the payload and a trailing checksum:
//
//	offset  size  field
//	0       4     magic "LRf1"
//	4       4     payload length (uint32, little-endian, at most storage.MaxPayload)
//	8       8     sequence (uint64, little-endian)
//	16      8     writer epoch (uint64, little-endian)
//	24      n     payload
//	24+n    4     CRC-32C (Castagnoli) of bytes [0, 24+n)
//
// The package does no I/O. Decode never trusts the length field: it is
// bounded by storage.MaxPayload before anything is sliced, and nothing is
// allocated, so a hostile length costs nothing.
package frame

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"looprig/rig/storage"
)

// Magic opens every frame.
const Magic = "LRf1"

const (
	// HeaderSize is the size of the fixed header that precedes the payload.
	HeaderSize = 4 + 4 + 8 + 8
	// TrailerSize is the size of the checksum that follows the payload.
	TrailerSize = 4
	// Overhead is the number of bytes a frame adds to its payload.
	Overhead = HeaderSize + TrailerSize
	// MaxPayload is the largest payload a frame may carry.
	MaxPayload = storage.MaxPayload
	// MaxSize is the size of the largest valid frame.
	MaxSize = MaxPayload + Overhead
)

// Decode errors. Every error Decode returns is one of these.
var (
	// ErrIncomplete means b ends before the frame does: the bytes seen so
	// far are a valid prefix of a frame, and more are needed to decide.
	ErrIncomplete = errors.New("frame: incomplete frame")
	// ErrBadMagic means b does not start with Magic.
	ErrBadMagic = errors.New("frame: bad magic")
	// ErrTooLarge means the length field is over MaxPayload.
	ErrTooLarge = errors.New("frame: payload length over the limit")
	// ErrChecksum means the CRC-32C does not match header and payload.
	ErrChecksum = errors.New("frame: checksum mismatch")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Frame is one decoded frame. Payload aliases the buffer it was decoded from.
type Frame struct {
	Seq     uint64
	Epoch   uint64
	Payload []byte
}

// Header is the fixed part of a frame, read without checking the checksum.
type Header struct {
	Length uint32
	Seq    uint64
	Epoch  uint64
}

// Size returns the size of the whole frame the header announces.
func (h Header) Size() int { return int(h.Length) + Overhead }

// Size returns the encoded size of a frame carrying payloadLen bytes.
func Size(payloadLen int) int { return payloadLen + Overhead }

// AppendFrame appends the encoding of one frame to dst and returns the
// extended slice. It does not allocate when dst has room for
// Size(len(payload)) more bytes. It panics if payload is over MaxPayload:
// callers refuse such payloads before encoding.
func AppendFrame(dst []byte, seq, epoch uint64, payload []byte) []byte {
	if len(payload) > MaxPayload {
		panic("frame: payload over MaxPayload")
	}
	start := len(dst)
	dst = append(dst, Magic...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint64(dst, seq)
	dst = binary.LittleEndian.AppendUint64(dst, epoch)
	dst = append(dst, payload...)
	sum := crc32.Checksum(dst[start:], castagnoli)
	return binary.LittleEndian.AppendUint32(dst, sum)
}

// DecodeHeader decodes the header at the start of b without looking at the
// payload or checksum. It returns ErrBadMagic, ErrTooLarge or ErrIncomplete
// (b shorter than HeaderSize but a prefix of a valid header so far).
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		n := min(len(b), len(Magic))
		if string(b[:n]) != Magic[:n] {
			return Header{}, ErrBadMagic
		}
		if len(b) >= 8 && binary.LittleEndian.Uint32(b[4:8]) > MaxPayload {
			return Header{}, ErrTooLarge
		}
		return Header{}, ErrIncomplete
	}
	if string(b[:4]) != Magic {
		return Header{}, ErrBadMagic
	}
	h := Header{
		Length: binary.LittleEndian.Uint32(b[4:8]),
		Seq:    binary.LittleEndian.Uint64(b[8:16]),
		Epoch:  binary.LittleEndian.Uint64(b[16:24]),
	}
	if h.Length > MaxPayload {
		return Header{}, ErrTooLarge
	}
	return h, nil
}

// Decode decodes the frame at the start of b and returns it with its size
// in bytes. On error n is 0 and the error is ErrIncomplete, ErrBadMagic,
// ErrTooLarge or ErrChecksum. The checks run in that order of need: magic,
// then the length bound, then completeness, then the checksum.
func Decode(b []byte) (f Frame, n int, err error) {
	h, err := DecodeHeader(b)
	if err != nil {
		return Frame{}, 0, err
	}
	size := h.Size()
	if len(b) < size {
		return Frame{}, 0, ErrIncomplete
	}
	body := size - TrailerSize
	if crc32.Checksum(b[:body], castagnoli) != binary.LittleEndian.Uint32(b[body:size]) {
		return Frame{}, 0, ErrChecksum
	}
	return Frame{Seq: h.Seq, Epoch: h.Epoch, Payload: b[HeaderSize:body:body]}, size, nil
}
