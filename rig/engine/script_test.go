package engine

import (
	"os/exec"
	"strings"
	"testing"
)

// writeScript writes an executable script at path through a child process
// (/bin/sh). A file this process opened for writing may still be open, for
// a moment, in a child another test forked meanwhile (between its fork and
// its exec), and executing the file then fails with ETXTBSY ("text file
// busy": the turn exits 126). A file only another process wrote is never
// open here.
func writeScript(t *testing.T, path, body string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `cat > "$1" && chmod 755 "$1"`, "sh", path)
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("write the script %s: %v\n%s", path, err, out)
	}
}
