package fsutil

import "golang.org/x/sys/unix"

// On Darwin the full sync is fcntl(F_FULLFSYNC); fsync is the fallback
// where a file system refuses it (see sync.go). Darwin has no fdatasync
// worth having, so DataSync is the same full sync, with the same fallback.
var fullSyncCall = syncCall{name: "fcntl F_FULLFSYNC", call: func(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0)
	return err
}}

const dataSyncName = "fsync"

var dataSyncCall = unix.Fsync
