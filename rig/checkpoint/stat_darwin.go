package checkpoint

import (
	"io/fs"
	"syscall"
)

// inodeCtime returns fi's inode number and change time (ns).
func inodeCtime(fi fs.FileInfo) (uint64, int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return st.Ino, st.Ctimespec.Nano()
}
