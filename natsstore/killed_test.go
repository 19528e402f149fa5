package natsstore

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"looprig/natsstore/embedded"
)

const (
	serverDirEnv  = "NATSSTORE_TEST_SERVER_DIR"
	serverPortEnv = "NATSSTORE_TEST_SERVER_PORT"
)

// serverHelperMain runs an embedded server in a helper process when the
// environment asks for one: it prints the URL and serves until killed or
// until its stdin closes.
func serverHelperMain() {
	dir := os.Getenv(serverDirEnv)
	if dir == "" {
		return
	}
	port, _ := strconv.Atoi(os.Getenv(serverPortEnv))
	e, err := embedded.Start(dir, embedded.Listen("127.0.0.1", port))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Printf("url %s\n", e.URL())
	_, _ = io.Copy(io.Discard, os.Stdin)
	e.Shutdown()
	os.Exit(0)
}

// startServerProcess runs an embedded server on dir in a helper process
// and returns its URL and a function that SIGKILLs it.
func startServerProcess(t *testing.T, dir string, port int) (string, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverDirEnv+"="+dir, serverPortEnv+"="+strconv.Itoa(port))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(func() { stdin.Close(); kill() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case l, ok := <-lines:
		u, found := strings.CutPrefix(l, "url ")
		if !ok || !found {
			t.Fatalf("server process said %q; stderr: %s", l, stderr.String())
		}
		return u, kill
	case <-time.After(30 * time.Second):
		t.Fatalf("server process did not start; stderr: %s", stderr.String())
	}
	return "", nil
}

// The server process is SIGKILLed while writers append, and started again
// on the same directory: no acknowledged append is lost (with
// sync_interval: always an ack comes after the write reached the disk).
func TestKilledServerKeepsAcknowledgedAppends(t *testing.T) {
	dir := t.TempDir()
	u, kill := startServerProcess(t, dir, 0)
	s := openStore(t, u, WithTimeout(2*time.Second))
	acked, stop := runWriters(t, s, 6)
	time.Sleep(400 * time.Millisecond)
	kill()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(parsed.Port())
	if u2, _ := startServerProcess(t, dir, port); u2 != u {
		t.Fatalf("restarted server at %s, want %s", u2, u)
	}
	time.Sleep(800 * time.Millisecond)
	checkWriters(t, s, stop(), acked)
}
