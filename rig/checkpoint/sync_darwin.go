package checkpoint

import (
	"io/fs"
	"path/filepath"
)

// syncTree makes everything written under root durable: Darwin has no
// syncfs, so every file and directory is fsynced.
func syncTree(root string, _ []Entry) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		return syncDir(p)
	})
}
