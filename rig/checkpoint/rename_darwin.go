package checkpoint

import "golang.org/x/sys/unix"

// renameNoReplace renames from to to, failing (EEXIST) rather than
// replacing an existing to, even an empty directory.
func renameNoReplace(from, to string) error {
	return unix.RenamexNp(from, to, unix.RENAME_EXCL)
}
