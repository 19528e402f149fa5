package cli

import "golang.org/x/sys/unix"

const (
	termiosGet = unix.TIOCGETA
	termiosSet = unix.TIOCSETA
)

// vdisable disables a terminal's special character (_POSIX_VDISABLE).
const vdisable = 0xff
