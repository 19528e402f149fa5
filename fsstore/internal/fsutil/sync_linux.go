package fsutil

import "golang.org/x/sys/unix"

// On Linux fsync and fdatasync flush the drive's cache: no full sync is
// needed beyond them (see sync.go).
var fullSyncCall syncCall

const dataSyncName = "fdatasync"

var dataSyncCall = unix.Fdatasync
