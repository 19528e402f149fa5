package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames from to to, failing (EEXIST) rather than
// replacing an existing to, even an empty directory. Where the file
// system does not support RENAME_NOREPLACE it checks, then renames: a
// directory created in between by someone else would be replaced only if
// it is empty.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		if _, err := os.Lstat(to); err == nil {
			return fmt.Errorf("rename %s: %w", to, fs.ErrExist)
		}
		return os.Rename(from, to)
	}
	return err
}
