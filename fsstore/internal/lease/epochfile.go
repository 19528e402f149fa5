package lease

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/fsutil"
	"looprig/fsstore/internal/seam"
	"looprig/rig/storage"
)

// MaxEpochFileSize bounds an epoch file. A real one is about 100 bytes; a
// larger file is refused as corrupt before it is read in full.
const MaxEpochFileSize = 4 << 10

// epochRecord is the on-disk form of an epoch file:
//
//	{"epoch":N,"pid":..,"host":"..","acquired":"RFC3339Nano","started":..,"boot":".."}
//
// "started" and "boot" (storage.Holder.Started, Boot) are left out where
// unknown, and absent from the files of looprigs before them.
type epochRecord struct {
	Epoch    uint64 `json:"epoch"`
	PID      int    `json:"pid"`
	Host     string `json:"host"`
	Acquired string `json:"acquired"`
	Started  uint64 `json:"started,omitempty"`
	Boot     string `json:"boot,omitempty"`
}

// maxBootIDLen bounds an epoch file's "boot" (a boot_id is 36 bytes).
const maxBootIDLen = 64

// ParseEpochFile decodes the contents of an epoch file. It is strict: the
// file must be one JSON object, at most MaxEpochFileSize bytes, whose
// "epoch" is an integer in [1, 2^64-1]; "pid" if present must be a
// non-negative integer, "acquired" if present and non-empty an RFC 3339
// time, "started" if present a non-negative integer and "boot" if present
// a string of at most maxBootIDLen bytes. Unknown fields are ignored. Any other content (empty, truncated,
// trailing garbage, huge) is an error; callers turn it into
// *storage.CorruptError and never reset the epoch.
func ParseEpochFile(data []byte) (uint64, storage.Holder, error) {
	if len(data) > MaxEpochFileSize {
		return 0, storage.Holder{}, fmt.Errorf("epoch file is %d bytes, over the limit of %d", len(data), MaxEpochFileSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return 0, storage.Holder{}, errors.New("epoch file is empty")
	}
	var raw struct {
		Epoch    json.RawMessage `json:"epoch"`
		PID      json.RawMessage `json:"pid"`
		Host     *string         `json:"host"`
		Acquired *string         `json:"acquired"`
		Started  json.RawMessage `json:"started"`
		Boot     *string         `json:"boot"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return 0, storage.Holder{}, fmt.Errorf("epoch file is not a JSON object: %w", err)
	}
	if len(raw.Epoch) == 0 || string(raw.Epoch) == "null" {
		return 0, storage.Holder{}, errors.New(`epoch file has no "epoch"`)
	}
	epoch, err := strconv.ParseUint(string(raw.Epoch), 10, 64)
	if err != nil {
		return 0, storage.Holder{}, fmt.Errorf(`epoch file has a bad "epoch" %.40q`, raw.Epoch)
	}
	if epoch == 0 {
		return 0, storage.Holder{}, errors.New(`epoch file has "epoch" 0, which is never granted`)
	}
	var h storage.Holder
	if len(raw.PID) > 0 && string(raw.PID) != "null" {
		pid, err := strconv.ParseInt(string(raw.PID), 10, 0)
		if err != nil || pid < 0 {
			return 0, storage.Holder{}, fmt.Errorf(`epoch file has a bad "pid" %.40q`, raw.PID)
		}
		h.PID = int(pid)
	}
	if raw.Host != nil {
		h.Host = *raw.Host
	}
	if raw.Acquired != nil && *raw.Acquired != "" {
		t, err := time.Parse(time.RFC3339Nano, *raw.Acquired)
		if err != nil {
			return 0, storage.Holder{}, fmt.Errorf(`epoch file has a bad "acquired": %w`, err)
		}
		h.Acquired = t
	}
	if len(raw.Started) > 0 && string(raw.Started) != "null" {
		started, err := strconv.ParseUint(string(raw.Started), 10, 64)
		if err != nil {
			return 0, storage.Holder{}, fmt.Errorf(`epoch file has a bad "started" %.40q`, raw.Started)
		}
		h.Started = started
	}
	if raw.Boot != nil {
		if len(*raw.Boot) > maxBootIDLen {
			return 0, storage.Holder{}, fmt.Errorf(`epoch file has a "boot" of %d bytes, over %d`, len(*raw.Boot), maxBootIDLen)
		}
		h.Boot = *raw.Boot
	}
	return epoch, h, nil
}

// formatEpochFile encodes an epoch file. ParseEpochFile(formatEpochFile(e, h))
// returns e and h (times compare Equal).
func formatEpochFile(epoch uint64, h storage.Holder) []byte {
	b, err := json.Marshal(epochRecord{
		Epoch:    epoch,
		PID:      h.PID,
		Host:     h.Host,
		Acquired: h.Acquired.Format(time.RFC3339Nano),
		Started:  h.Started,
		Boot:     h.Boot,
	})
	if err != nil { // cannot happen: plain struct of strings and numbers
		panic(err)
	}
	return append(b, '\n')
}

// readEpochFile reads the epoch file at path without following a symlink
// and without blocking on a FIFO. An absent file is epoch 0 with a nil
// error. Content that ParseEpochFile refuses, a file over
// MaxEpochFileSize, a symlink or a non-regular file is a
// *storage.CorruptError. Other errors (permissions, I/O) are returned as
// they are.
func readEpochFile(name, path string) (uint64, storage.Holder, error) {
	corrupt := func(reason string, err error) error {
		return &storage.CorruptError{Name: name, Path: path, Offset: -1, Reason: reason, EpochFile: true, Err: err}
	}
	fd, err := fsutil.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case err == unix.ENOENT:
		return 0, storage.Holder{}, nil
	case err == unix.ELOOP:
		return 0, storage.Holder{}, corrupt("epoch file is a symbolic link", nil)
	case err != nil:
		return 0, storage.Holder{}, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, storage.Holder{}, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, storage.Holder{}, corrupt("epoch file is not a regular file", nil)
	}
	if st.Size > MaxEpochFileSize {
		return 0, storage.Holder{}, corrupt(fmt.Sprintf("epoch file is %d bytes, over the limit of %d", st.Size, MaxEpochFileSize), nil)
	}
	// Read one byte more than fstat saw (a real file is ~100 bytes; probing
	// 10k leases must not allocate 4 KiB each). Epoch files are replaced
	// by rename, never rewritten in place; one that grew since fstat reads
	// as a cut-off prefix and is refused as corrupt.
	buf := make([]byte, st.Size+1)
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(fd, buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, storage.Holder{}, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
		if int64(n) >= st.Size && n < len(buf) {
			break // all fstat saw: skip the read that would return 0
		}
	}
	epoch, h, err := ParseEpochFile(buf[:n])
	if err != nil {
		return 0, storage.Holder{}, corrupt("unreadable epoch file", err)
	}
	return epoch, h, nil
}

// writeEpochFile atomically replaces the epoch file at path with epoch and
// holder: a temp file in the same directory (0600), fsync, rename, fsync of
// the directory. dirFD, if >= 0, is an open descriptor of path's directory
// used for that last fsync. The caller holds the directory guard.
func writeEpochFile(path string, dirFD int, epoch uint64, h storage.Holder) error {
	return fsutil.WriteFileAtomic(path, formatEpochFile(epoch, h), fileMode, dirFD,
		fsutil.Seams{TempWritten: seam.EpochTempWritten, Renamed: seam.EpochRenamed})
}

// nextEpoch returns n+1, or a *storage.CorruptError if n cannot grow.
func nextEpoch(name, path string, n uint64) (uint64, error) {
	if n == math.MaxUint64 {
		return 0, &storage.CorruptError{Name: name, Path: path, Offset: -1, Reason: "epoch is at its maximum and cannot advance", EpochFile: true}
	}
	return n + 1, nil
}
