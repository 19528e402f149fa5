package cli

import "golang.org/x/sys/unix"

const (
	termiosGet = unix.TCGETS
	termiosSet = unix.TCSETS
)

// vdisable disables a terminal's special character (_POSIX_VDISABLE).
const vdisable = 0
