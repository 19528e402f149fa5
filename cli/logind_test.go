package cli

import (
	"os"
	"os/user"
	"path/filepath"
	"testing"
)

func TestLogindKillsHosts(t *testing.T) {
	u, err := user.Current()
	if err != nil {
		t.Skip(err)
	}
	write := func(root, rel, text string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	systemd := func() string {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "run/systemd/system"), 0o755); err != nil {
			t.Fatal(err)
		}
		return root
	}

	if logindKillsHosts(t.TempDir()) {
		t.Error("no systemd: want false")
	}
	root := systemd()
	if logindKillsHosts(root) {
		t.Error("no setting (the default): want false")
	}
	write(root, "etc/systemd/logind.conf", "[Login]\n#KillUserProcesses=no\nKillUserProcesses=yes\n")
	if !logindKillsHosts(root) {
		t.Error("KillUserProcesses=yes: want true")
	}
	write(root, "etc/systemd/logind.conf.d/10-keep.conf", "[Login]\nKillUserProcesses=no\n")
	if logindKillsHosts(root) {
		t.Error("a drop-in saying no wins over logind.conf: want false")
	}
	write(root, "etc/systemd/logind.conf.d/20-kill.conf", "[Login]\nKillUserProcesses=1\n")
	if !logindKillsHosts(root) {
		t.Error("a later drop-in saying yes: want true")
	}
	write(root, "var/lib/systemd/linger/"+u.Username, "")
	if logindKillsHosts(root) {
		t.Error("lingering enabled: want false")
	}
	other := systemd()
	write(other, "etc/systemd/logind.conf", "[Other]\nKillUserProcesses=yes\n")
	if logindKillsHosts(other) {
		t.Error("the key outside [Login]: want false")
	}
}
