package procgroup

// Linux: /proc.

import (
	"bytes"
	"io"
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
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, false, false
	}
	// pid (comm) state ppid pgrp ...; comm may contain anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return 0, false, false
	}
	pg, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, false, false
	}
	st := f[0]
	return pg, !(len(st) == 1 && (st[0] == 'Z' || st[0] == 'X')), true
}

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
