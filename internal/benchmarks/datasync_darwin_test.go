package benchmarks

import (
	"os"

	"golang.org/x/sys/unix"
)

// dataSync is the baseline's sync: fcntl(F_FULLFSYNC), as the journal's
// commit on Darwin (fsstore/internal/fsutil.DataSync).
func dataSync(f *os.File) error {
	_, err := unix.FcntlInt(f.Fd(), unix.F_FULLFSYNC, 0)
	return err
}
