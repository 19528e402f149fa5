package benchmarks

import (
	"os"

	"golang.org/x/sys/unix"
)

// dataSync is the baseline's sync: fdatasync, as the journal's commit.
func dataSync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
