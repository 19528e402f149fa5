package fsstore

import "testing"

// Both tables are checked on every platform; only the statfs call that
// feeds one of them is platform-specific.
func TestNetworkFSTables(t *testing.T) {
	for _, tt := range []struct {
		magic uint32
		want  string
	}{
		{0x6969, "NFS"}, {0x517B, "SMB"}, {0xFF534D42, "SMB"}, {0xFE534D42, "SMB"},
		{0xEF53, ""} /* ext4 */, {0x9123683E, ""} /* btrfs */, {0x58465342, ""} /* xfs */, {0x01021994, ""} /* tmpfs */, {0x794C7630, ""}, /* overlayfs */
	} {
		got, network := linuxNetworkFS(tt.magic)
		if got != tt.want || network != (tt.want != "") {
			t.Errorf("linux f_type %#x: %q %v, want %q", tt.magic, got, network, tt.want)
		}
	}
	for _, tt := range []struct{ name, want string }{
		{"nfs", "NFS"}, {"smbfs", "SMB"}, {"afpfs", "AFP"}, {"webdav", "WebDAV"}, {"ftp", "FTP"},
		{"apfs", ""}, {"hfs", ""}, {"msdos", ""}, {"exfat", ""}, {"devfs", ""}, {"tmpfs", ""}, {"NFS", ""}, {"", ""},
	} {
		got, network := darwinNetworkFS(tt.name)
		if got != tt.want || network != (tt.want != "") {
			t.Errorf("darwin f_fstypename %q: %q %v, want %q", tt.name, got, network, tt.want)
		}
	}
}

// The store's own directory (a local temp dir) is not refused.
func TestNetworkFilesystemLocal(t *testing.T) {
	if name, network := networkFilesystem(t.TempDir()); network {
		t.Fatalf("a temp dir is on %s", name)
	}
}
