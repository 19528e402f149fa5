package rigtest

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func randUint() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return binary.LittleEndian.Uint64(b[:])
}

// newMarker returns a unique sleep duration such as "1000.123456789": a
// `sleep MARKER` process is findable in /proc by it, and nothing else on
// the machine carries it.
func newMarker() string {
	return fmt.Sprintf("%d.%09d", 1000+randUint()%1000, randUint()%1_000_000_000)
}

func procAvailable() bool {
	_, err := os.Stat("/proc/self/cmdline")
	return err == nil
}

// procsWith lists the live processes whose command line contains marker, as
// "pid: cmdline". Zombies have an empty command line and are not listed.
func procsWith(marker string) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range ents {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		cmd := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
		if strings.Contains(cmd, marker) {
			out = append(out, d.Name()+": "+cmd)
		}
	}
	return out
}

// sleepProcs lists live `sleep MARKER` processes.
func sleepProcs(marker string) []string {
	var out []string
	for _, p := range procsWith(marker) {
		if _, cmd, _ := strings.Cut(p, ": "); strings.HasPrefix(filepath.Base(strings.Fields(cmd)[0]), "sleep") {
			out = append(out, p)
		}
	}
	return out
}

func waitSleepRunning(t testing.TB, marker string) {
	t.Helper()
	if !procAvailable() {
		return
	}
	eventually(t, "sleep "+marker+" to run", func() bool { return len(sleepProcs(marker)) > 0 })
}

// noProcs fails the test when a process carrying marker is alive.
func noProcs(t testing.TB, marker, when string) {
	t.Helper()
	if !procAvailable() {
		return
	}
	if ps := procsWith(marker); len(ps) > 0 {
		t.Errorf("%s: processes of the turn are still alive: %q", when, ps)
	}
}

// waitNoProcs waits until no process carries marker (for processes whose
// reaper runs elsewhere, e.g. after a helper's death).
func waitNoProcs(t testing.TB, marker, when string) {
	t.Helper()
	if !procAvailable() {
		return
	}
	eventually(t, when+": processes carrying "+marker+" to be gone", func() bool { return len(procsWith(marker)) == 0 })
}

// canonical returns the symlink-free absolute form of path.
func canonical(t testing.TB, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := filepath.EvalSymlinks(abs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
