package procgroup

// Linux: /proc.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// bootIDFile holds an id the kernel draws at each boot.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

func bootID() string {
	b, err := os.ReadFile(bootIDFile)
	if id := strings.TrimSpace(string(b)); err == nil && id != "" {
		return id
	}
	return UnknownBoot
}

// maxEnviron bounds how much of a process's environment is read.
const maxEnviron = 1 << 20

func inspect(g Group) (Status, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return Unmarked, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return Unmarked, err
	}
	live := false
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		pgrp, alive, ok := stat(name)
		if !ok || pgrp != g.PGID || !alive {
			continue
		}
		live = true
		if env, ok := environ(name); ok && carries(env, g.Marks) {
			return Marked, nil
		}
	}
	if live {
		return Unmarked, nil
	}
	return Gone, nil
}

// stat reads process pid's group and whether it is alive (not a zombie);
// ok is false when it is gone or its stat cannot be parsed.
func stat(pid string) (pgrp int, alive, ok bool) {
	st, err := readStat(pid)
	if err != nil {
		return 0, false, false
	}
	return st.pgrp, st.alive, true
}

// procStat is what /proc/PID/stat says of a process.
type procStat struct {
	ppid, pgrp int
	tty        int64
	start      uint64
	alive      bool
}

// readStat reads and parses /proc/PID/stat.
func readStat(pid string) (procStat, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice num_threads
	// itrealvalue starttime ...; comm may contain anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errBadStat
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return procStat{}, errBadStat
	}
	var st procStat
	if st.ppid, err = strconv.Atoi(string(f[1])); err != nil {
		return procStat{}, errBadStat
	}
	if st.pgrp, err = strconv.Atoi(string(f[2])); err != nil {
		return procStat{}, errBadStat
	}
	if st.tty, err = strconv.ParseInt(string(f[4]), 10, 64); err != nil {
		return procStat{}, errBadStat
	}
	if st.start, err = strconv.ParseUint(string(f[19]), 10, 64); err != nil {
		return procStat{}, errBadStat
	}
	state := f[0]
	st.alive = !(len(state) == 1 && (state[0] == 'Z' || state[0] == 'X'))
	return st, nil
}

var errBadStat = errors.New("procgroup: unreadable /proc/PID/stat")

func look(pid int) (Process, error) {
	st, err := readStat(strconv.Itoa(pid))
	switch {
	case errors.Is(err, fs.ErrNotExist), err == nil && !st.alive:
		return Process{}, fmt.Errorf("process %d: %w", pid, ErrNoProcess)
	case err != nil:
		return Process{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return Process{PID: pid, PPID: st.ppid, PGID: st.pgrp, Start: st.start, Terminal: st.tty != 0}, nil
}

// processEnviron is environ by pid.
func processEnviron(pid int) ([]string, bool) { return environ(strconv.Itoa(pid)) }

// environ reads process pid's environment as it was when it started (what
// it inherited); ok is false when it cannot be read (another user's, gone).
func environ(pid string) ([]string, bool) {
	f, err := os.Open("/proc/" + pid + "/environ")
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEnviron))
	if err != nil {
		return nil, false
	}
	if len(b) == 0 {
		return nil, false
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), true
}

// pfExiting is PF_EXITING, the flag of a task whose exit has begun
// (include/linux/sched.h), in the flags field of /proc/PID/stat.
const pfExiting = 0x4

// sigkillBit is SIGKILL's bit in the signal masks of /proc/PID/status.
const sigkillBit = 1 << (9 - 1)

func dead(pid int) (bool, error) {
	p := strconv.Itoa(pid)
	b, err := os.ReadFile("/proc/" + p + "/stat")
	if err != nil {
		// Gone, unless /proc itself cannot be read.
		if _, serr := os.Stat("/proc/self/stat"); serr != nil {
			return false, serr
		}
		return true, nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false, nil
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 7 {
		return false, nil
	}
	if st := f[0]; len(st) == 1 && (st[0] == 'Z' || st[0] == 'X') {
		return true, nil
	}
	if flags, err := strconv.ParseUint(string(f[6]), 10, 64); err == nil && flags&pfExiting != 0 {
		return true, nil
	}
	status, err := os.ReadFile("/proc/" + p + "/status")
	if err != nil {
		return true, nil // gone since
	}
	for _, line := range strings.Split(string(status), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || (name != "SigPnd" && name != "ShdPnd") {
			continue
		}
		if mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && mask&sigkillBit != 0 {
			return true, nil
		}
	}
	return false, nil
}
