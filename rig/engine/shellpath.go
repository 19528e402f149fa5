package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Which shell runs a turn's input. The shell engine runs it as
// "SHELL -c INPUT", SHELL being Config.Shell; who chooses SHELL (a
// profile, $SHELL) is the caller's business, and these helpers give it
// the one rule for what makes a path usable.

// DefaultShell runs turns when nothing names a usable shell. Every turn
// ran in it before a shell could be chosen.
const DefaultShell = "/bin/sh"

// ShellError says why a path cannot run turns.
type ShellError struct {
	Path   string
	Reason string
	Err    error // the file system's error, when there was one
}

func (e *ShellError) Error() string {
	return fmt.Sprintf("shell %q %s", e.Path, e.Reason)
}

func (e *ShellError) Unwrap() error { return e.Err }

// CheckShell returns nil when path can run a turn as "path -c INPUT": an
// absolute path to a regular file (symlinks followed) with an execute
// permission bit set; else *ShellError saying why not.
func CheckShell(path string) error {
	if !filepath.IsAbs(path) {
		return &ShellError{Path: path, Reason: "is not an absolute path"}
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &ShellError{Path: path, Reason: "does not exist", Err: err}
	case err != nil:
		return &ShellError{Path: path, Reason: "cannot be examined: " + underlying(err).Error(), Err: err}
	case !fi.Mode().IsRegular():
		return &ShellError{Path: path, Reason: "is not a regular file"}
	case fi.Mode().Perm()&0o111 == 0:
		return &ShellError{Path: path, Reason: "is not executable"}
	}
	return nil
}

// UserShell is the shell of a user who names none explicitly: env (the
// value of $SHELL) when CheckShell accepts it, else DefaultShell. An
// unset, relative or unusable $SHELL is not an error: turns run in
// DefaultShell, as they always did.
func UserShell(env string) string {
	if env != "" && CheckShell(env) == nil {
		return env
	}
	return DefaultShell
}

// underlying strips the path from a *fs.PathError: ShellError names the
// path already.
func underlying(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
