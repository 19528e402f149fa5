// Package atomicfile replaces small files the TUI keeps beside the store and
// the configuration (the seen state, the theme choice) in one step: readers
// see the old contents or the new, never a part.
//
// The store's own files are written by fsstore, which also syncs them and
// their directory; these files are preferences that a crash may roll back,
// so they are not synced.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// WriteFile writes data to a new file (mode 0600) in path's directory and
// renames it over path. On failure the temporary file is removed and path
// is unchanged.
func WriteFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return errors.Join(werr, cerr)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
