// Package testbin builds the looprig command for the tests that run the
// real binary (end-to-end, soak, benchmarks, the terminal tests): one
// build per set of build tags per test process, into a directory Cleanup
// removes (a package's TestMain calls it after m.Run).
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	mu     sync.Mutex
	dir    string
	builds = map[string]*build{} // by tags
)

type build struct {
	once sync.Once
	path string
	err  error
}

// Build builds package main of the module (import path "looprig", from
// any directory inside it) with tags, once per process per tag set, and
// returns the binary's path.
func Build(tags ...string) (string, error) {
	key := strings.Join(tags, ",")
	mu.Lock()
	b := builds[key]
	if b == nil {
		b = &build{}
		builds[key] = b
	}
	mu.Unlock()
	b.once.Do(func() {
		d, err := buildDir()
		if err != nil {
			b.err = err
			return
		}
		name := "looprig"
		if key != "" {
			name += "-" + strings.ReplaceAll(key, ",", "-")
		}
		b.path = filepath.Join(d, name)
		args := []string{"build", "-o", b.path}
		if key != "" {
			args = append(args, "-tags", key)
		}
		out, err := exec.Command("go", append(args, "looprig")...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build looprig (tags %q): %v\n%s", key, err, out)
		}
	})
	return b.path, b.err
}

// Looprig is Build for a test or benchmark: a failed build fails tb.
func Looprig(tb testing.TB, tags ...string) string {
	tb.Helper()
	path, err := Build(tags...)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// Program builds package pkg, a command of the module's (such as
// "looprig/internal/testbin/fullscreen"), once per process, and returns
// its path; a failed build fails tb.
func Program(tb testing.TB, pkg string) string {
	tb.Helper()
	mu.Lock()
	b := builds["pkg:"+pkg]
	if b == nil {
		b = &build{}
		builds["pkg:"+pkg] = b
	}
	mu.Unlock()
	b.once.Do(func() {
		d, err := buildDir()
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(d, filepath.Base(pkg))
		if out, err := exec.Command("go", "build", "-o", b.path, pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

// Cleanup removes the binaries built so far.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
		dir = ""
		builds = map[string]*build{}
	}
}

// buildDir is the process's directory of binaries, made on first use.
func buildDir() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if dir == "" {
		d, err := os.MkdirTemp("", "looprig-bin-")
		if err != nil {
			return "", err
		}
		dir = d
	}
	return dir, nil
}
