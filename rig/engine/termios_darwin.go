package engine

import "golang.org/x/sys/unix"

// termios ioctls (tcgetattr, tcsetattr TCSANOW).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)
