// Command peakrss runs a command and reports its peak resident set size.
//
// A test cannot read a child's peak RSS from its own wait: on Linux, Go
// starts children with CLONE_VM|CLONE_VFORK, and exec carries the parent's
// high-water mark into the child's, so the child reports at least the test
// binary's peak (tens of megabytes, more under the race detector). This
// small process stands between: the figure it reports is the larger of its
// own few megabytes and the command's.
//
// Usage: peakrss REPORT-FILE COMMAND [ARG...]. It writes the peak in bytes
// to REPORT-FILE and exits with the command's exit code.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: peakrss REPORT-FILE COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		os.Exit(2)
	}
	peak := int64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	if runtime.GOOS != "darwin" {
		peak <<= 10 // KiB, except on macOS where it is bytes
	}
	if err := os.WriteFile(os.Args[1], []byte(strconv.FormatInt(peak, 10)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		os.Exit(2)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
