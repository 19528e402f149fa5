package cli

import (
	"bufio"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
)

// logindKillsHosts reports whether systemd-logind on this machine kills a
// user's processes at logout (KillUserProcesses=yes) while lingering is off
// for the current user: then every host started from an SSH login dies
// when that login ends, which is what hosts are for. root is "/" but for
// tests. The configuration is read as logind reads it: logind.conf, then
// the drop-in directories, later files winning; no setting means no (the
// upstream default).
func logindKillsHosts(root string) bool {
	if _, err := os.Stat(filepath.Join(root, "run/systemd/system")); err != nil {
		return false // not booted with systemd
	}
	kill := false
	files := []string{filepath.Join(root, "etc/systemd/logind.conf")}
	var dropins []string
	for _, dir := range []string{"usr/lib/systemd/logind.conf.d", "run/systemd/logind.conf.d", "etc/systemd/logind.conf.d"} {
		m, _ := filepath.Glob(filepath.Join(root, dir, "*.conf"))
		dropins = append(dropins, m...)
	}
	slices.SortFunc(dropins, func(a, b string) int { return strings.Compare(filepath.Base(a), filepath.Base(b)) })
	for _, f := range append(files, dropins...) {
		if v, ok := killUserProcesses(f); ok {
			kill = v
		}
	}
	if !kill {
		return false
	}
	u, err := user.Current()
	if err != nil {
		return true
	}
	_, err = os.Stat(filepath.Join(root, "var/lib/systemd/linger", u.Username))
	return err != nil
}

// killUserProcesses reads the last KillUserProcesses= of the [Login]
// section of a logind configuration file.
func killUserProcesses(path string) (value, found bool) {
	f, err := os.Open(path)
	if err != nil {
		return false, false
	}
	defer f.Close()
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			section = strings.Trim(line, "[]")
		case section == "Login":
			k, v, ok := strings.Cut(line, "=")
			if ok && strings.TrimSpace(k) == "KillUserProcesses" {
				switch strings.ToLower(strings.TrimSpace(v)) {
				case "yes", "true", "on", "1":
					value, found = true, true
				case "no", "false", "off", "0":
					value, found = false, true
				}
			}
		}
	}
	return value, found
}

// lingerHint is what to do when logind kills hosts at logout.
const lingerHint = "this machine's systemd-logind kills your processes at logout (KillUserProcesses=yes), so background hosts will end when this login does; keep them with: loginctl enable-linger $USER"

// warnIfLogindKillsHosts warns, for people, that hosts will not outlive
// this login.
func (e *env) warnIfLogindKillsHosts() {
	if !e.json && logindKillsHosts("/") {
		e.stderr.Write([]byte("looprig: warning: " + lingerHint + "\n"))
	}
}

// tuiWarning is what the TUI shows at start: lingerHint when logind kills
// hosts at logout, else nothing.
func tuiWarning() string {
	if logindKillsHosts("/") {
		return lingerHint
	}
	return ""
}
