package host

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"looprig/internal/testexec"
)

const (
	helperEnv     = "LOOPRIG_HOST_TEST_HELPER"
	helperSockEnv = "LOOPRIG_HOST_TEST_SOCKET"
)

type helperResult struct {
	UID  int    `json:"uid"`
	OK   bool   `json:"ok"`
	Kind string `json:"kind"`
	Err  string `json:"err"`
}

// helperMain runs in a helper process: it dials the socket and says what
// happened.
func helperMain() int {
	if mode := os.Getenv(helperEnv); mode != "dial" {
		return startHelperMain(mode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := helperResult{UID: os.Getuid()}
	c, err := Dial(ctx, os.Getenv(helperSockEnv))
	if err == nil {
		res.OK = true
		c.Close()
	} else {
		res.Err = err.Error()
		var re *RemoteError
		if errors.As(err, &re) {
			res.Kind = re.Kind.String()
		}
	}
	json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// A process of another uid that reaches the socket is refused by its peer
// credentials. (The 0700 directory and the 0600 socket keep it out first;
// this test loosens both to reach the second line.)
func TestPeerOfAnotherUIDRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a helper as uid 65534")
	}
	f := start(t)
	dir, err := os.MkdirTemp("", "lrpeer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The helper must be able to run the test binary and reach the socket.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "host.test")
	testexec.WriteExecutable(t, bin, string(exe))
	link := filepath.Join(dir, "h.sock")
	if err := os.Link(f.path, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(link, 0o666); err != nil {
		t.Fatal(err)
	}
	run := func(cred *syscall.Credential) helperResult {
		t.Helper()
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=dial", helperSockEnv+"="+link)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		var res helperResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("helper said %q: %v", out, err)
		}
		return res
	}
	res := run(&syscall.Credential{Uid: 65534, Gid: 65534})
	if res.UID != 65534 {
		t.Fatalf("helper ran as uid %d", res.UID)
	}
	if res.OK || res.Kind != KindPeerRefused.String() {
		t.Fatalf("uid 65534 was not refused: %+v", res)
	}
	t.Logf("uid 65534: %s", res.Err)
	// The same path works for our own uid, and the host serves on.
	if res := run(nil); !res.OK {
		t.Fatalf("own uid refused: %+v", res)
	}
	if _, err := f.dial().Status(wctx(t)); err != nil {
		t.Fatal(err)
	}
}
