package procgroup

// Darwin: sysctl kern.boottime, kern.proc.pgrp and kern.procargs2.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// szomb is p_stat of a zombie (sys/proc.h).
const szomb = 5

func bootID() string {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil || (tv.Sec == 0 && tv.Usec == 0) {
		return UnknownBoot
	}
	return "boottime-" + strconv.FormatInt(int64(tv.Sec), 10) + "." + strconv.FormatInt(int64(tv.Usec), 10)
}

func inspect(g Group) (Status, error) {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", g.PGID)
	if err != nil {
		return Unmarked, err
	}
	live := false
	for _, p := range procs {
		if p.Proc.P_stat == szomb {
			continue
		}
		live = true
		if env, ok := environ(int(p.Proc.P_pid)); ok && carries(env, g.Marks) {
			return Marked, nil
		}
	}
	if live {
		return Unmarked, nil
	}
	return Gone, nil
}

// environ reads process pid's environment from kern.procargs2: argc (a
// 32-bit integer), the executable's path, NUL padding, argc arguments,
// then the environment, each NUL-terminated, up to an empty string.
func environ(pid int) ([]string, bool) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil || len(b) < 4 {
		return nil, false
	}
	argc := int(binary.NativeEndian.Uint32(b))
	s := string(b[4:])
	i := strings.IndexByte(s, 0) // end of the executable's path
	if i < 0 {
		return nil, false
	}
	s = strings.TrimLeft(s[i:], "\x00")
	parts := strings.Split(s, "\x00")
	if len(parts) < argc {
		return nil, false
	}
	var env []string
	for _, p := range parts[argc:] {
		if p == "" {
			break
		}
		env = append(env, p)
	}
	return env, true
}

// pControlT is P_CONTROLT of p_flag: the process has a controlling
// terminal (sys/proc.h).
const pControlT = 0x2

func look(pid int) (Process, error) {
	// A pid nobody has gives an empty answer, which SysctlKinfoProc
	// reports as EIO.
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	switch {
	case errors.Is(err, unix.ESRCH), errors.Is(err, unix.EIO), err == nil && (k.Proc.P_pid != int32(pid) || k.Proc.P_stat == szomb):
		return Process{}, fmt.Errorf("process %d: %w", pid, ErrNoProcess)
	case err != nil:
		return Process{}, fmt.Errorf("process %d: %w", pid, err)
	}
	start := uint64(k.Proc.P_starttime.Sec)*1_000_000 + uint64(k.Proc.P_starttime.Usec)
	return Process{PID: pid, PPID: int(k.Eproc.Ppid), PGID: int(k.Eproc.Pgid), Start: start,
		Terminal: k.Proc.P_flag&pControlT != 0}, nil
}

// processEnviron is environ, named as on Linux.
func processEnviron(pid int) ([]string, bool) { return environ(pid) }
func dead(pid int) (bool, error) {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.pid", pid)
	if err != nil {
		return false, err
	}
	return len(procs) == 0 || procs[0].Proc.P_stat == szomb, nil
}
