package checkpoint

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// inodeCtime returns fi's inode number and change time (ns).
func inodeCtime(fi fs.FileInfo) (uint64, int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return uint64(st.Ino), st.Ctim.Nano()
}

// stampOfStat is the stamp of what st describes.
func stampOfStat(st *unix.Stat_t) stamp {
	return stamp{size: st.Size, mode: modeOfStat(st), mtimeNs: st.Mtim.Nano(), ctimeNs: st.Ctim.Nano(), ino: uint64(st.Ino)}
}
