package fsstore

import "golang.org/x/sys/unix"

// networkFilesystem reports whether dir is on a network file system (NFS,
// SMB/CIFS), and which.
func networkFilesystem(dir string) (string, bool) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		return "", false
	}
	return linuxNetworkFS(uint32(sfs.Type))
}
