package fsstore

// The network file systems a store refuses (unless allowed): flock there
// does not exclude other hosts, so two machines could hold one lease. Each
// platform reads the file system's type with statfs(2) (netfs_linux.go,
// netfs_darwin.go); the tables are here, as pure functions, so that tests
// check both on any platform.

// linuxNetworkFS names the network file system whose statfs f_type is
// magic, if it is one.
func linuxNetworkFS(magic uint32) (string, bool) {
	switch magic {
	case 0x6969: // NFS_SUPER_MAGIC
		return "NFS", true
	case 0x517B, 0xFF534D42, 0xFE534D42: // SMB_SUPER_MAGIC, CIFS, SMB2
		return "SMB", true
	}
	return "", false
}

// darwinNetworkFS names the network file system whose statfs
// f_fstypename is typeName, if it is one. (Darwin's f_type numbers are
// assigned at boot; the name is what identifies a file system there.)
func darwinNetworkFS(typeName string) (string, bool) {
	switch typeName {
	case "nfs":
		return "NFS", true
	case "smbfs": // SMB and CIFS shares
		return "SMB", true
	case "afpfs": // AppleTalk Filing Protocol
		return "AFP", true
	case "webdav":
		return "WebDAV", true
	case "ftp": // mount_ftp (read-only anyway)
		return "FTP", true
	}
	return "", false
}
