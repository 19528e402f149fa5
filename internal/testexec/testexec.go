// Package testexec writes the executables tests make (a fake shell, a
// fake agent, a stub git, a copy of the test binary) so that executing
// them cannot fail with ETXTBSY.
//
// A file the test process opens for writing is, for a moment, also open
// in every child another goroutine forks meanwhile: between its fork and
// its exec (where the close-on-exec descriptor is closed), the child holds
// the descriptor too (golang/go#22315). Executing the file while any
// process holds it open for writing fails with ETXTBSY ("text file busy";
// through a shell, exit status 126), so a test that writes an executable
// with os.WriteFile and runs it fails now and then when other tests run
// in parallel. WriteExecutable has a child process write the file: the
// descriptor is opened after that child's exec and closed when it exits,
// and never exists in the test process, so no other child inherits it.
package testexec

import (
	"os/exec"
	"strings"
	"testing"
)

// WriteExecutable writes body to path, mode 0755 (whatever the umask),
// creating or truncating it, through a child process (/bin/sh), so that
// executing it afterwards cannot fail with ETXTBSY: see the package doc.
// body may be a script or any bytes (a binary). It fails the test on
// error.
func WriteExecutable(t testing.TB, path, body string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `cat > "$1" && chmod 755 "$1"`, "sh", path)
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("write the executable %s: %v\n%s", path, err, out)
	}
}
