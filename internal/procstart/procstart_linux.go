//go:build linux

package procstart

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Self is this process's Stamp, read once; zero where /proc cannot say.
var Self = sync.OnceValue(func() Stamp {
	boot := Boot()
	_, ticks, err := Of(os.Getpid())
	if err != nil || boot == "" {
		return Stamp{}
	}
	return Stamp{Ticks: ticks, Boot: boot}
})

// Boot is the kernel's boot_id, read once; "" where it cannot be read.
var Boot = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// ErrMalformed is a /proc/PID/stat this package cannot read.
var ErrMalformed = errors.New("procstart: malformed /proc/PID/stat")

// Of reads process pid's state letter (R, S, T, Z, ...) and start time in
// clock ticks since boot from /proc/PID/stat. A pid with no process is an
// error satisfying errors.Is(err, fs.ErrNotExist) (or ESRCH, when it exits
// as it is read).
func Of(pid int) (state byte, ticks uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseStat(b)
}

// parseStat reads the state and start time of a /proc/PID/stat line:
// "pid (comm) S ppid ...". comm may hold spaces and parentheses, so the
// fields are counted from the last ')'.
func parseStat(b []byte) (state byte, ticks uint64, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, ErrMalformed
	}
	fields := bytes.Fields(b[i+2:])
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0, ErrMalformed
	}
	ticks, err = strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0, 0, ErrMalformed
	}
	return fields[0][0], ticks, nil
}
