package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"looprig/internal/testexec"
)

// The hook socket serves only peers of its own uid (internal/peercred):
// the socket's mode and its directory's are the first guard, the peer's
// uid the second, the turn's token the third. The tests of the token
// (claude_hostile_test.go) cannot tell whether the uid is checked; this
// one opens the first guard on purpose and sends a request with the right
// token from a process of another uid: it gets no answer, and nothing is
// asked. The same request from this uid is answered. It needs root (to
// run the client as nobody) and is skipped otherwise.

// Environment of the helper process (the test binary run again): the
// socket, and the token (given to it: the token file is this user's).
const (
	peerHelperEnv  = "LOOPRIG_ENGINE_TEST_PEERUID_SOCKET" // set: this process is the client
	peerTokenEnv   = "LOOPRIG_ENGINE_TEST_PEERUID_TOKEN"
	peerUIDNobody  = 65534
	peerHelperMark = "peeruid-helper:"
)

// TestHookPeerUIDHelper is the client TestHookRefusesAPeerOfAnotherUID
// runs as another user: it asks the hook socket its environment names,
// with the turn's token, as `looprig hook` does (RunHook), and prints what
// came back.
func TestHookPeerUIDHelper(t *testing.T) {
	if os.Getenv(peerHelperEnv) == "" {
		t.Skip("the client of TestHookRefusesAPeerOfAnotherUID")
	}
	in, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "echo from uid " + fmt.Sprint(os.Geteuid())}})
	target := HookTarget{Socket: os.Getenv(peerHelperEnv), Token: os.Getenv(peerTokenEnv)}
	out, err := RunHook(context.Background(), strings.NewReader(string(in)), target, 20*time.Second)
	fmt.Printf("%s uid=%d err=%v out=%s\n", peerHelperMark, os.Geteuid(), err, out)
}

func TestHookRefusesAPeerOfAnotherUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a client of the hook socket as another user")
	}
	// A directory everyone may enter, for the socket and a copy of this
	// test binary (go test's own directory is private).
	dir, err := os.MkdirTemp("", "lrpeeruid")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	client := filepath.Join(dir, "client.test")
	testexec.WriteExecutable(t, client, string(bin))

	sink := newSink()
	var mu sync.Mutex
	var asked []string
	sink.gate = func(_ context.Context, prompt string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, prompt)
		return true, nil
	}
	h, err := startHooks(context.Background(), dir, sink, nil, time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	// Open the socket to everyone: only the uid check is left.
	if err := os.Chmod(h.path, 0o666); err != nil {
		t.Fatal(err)
	}

	run := func(uid int) string {
		t.Helper()
		cmd := exec.Command(client, "-test.run=^TestHookPeerUIDHelper$")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), peerHelperEnv+"="+h.path, peerTokenEnv+"="+h.token)
		if uid != os.Geteuid() {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		}
		out, err := cmd.CombinedOutput()
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, peerHelperMark) {
				return l
			}
		}
		if uid != os.Geteuid() {
			t.Skipf("cannot run a client as uid %d here: %v\n%s", uid, err, out)
		}
		t.Fatalf("the client did not report: %v\n%s", err, out)
		return ""
	}

	got := run(peerUIDNobody)
	if !strings.Contains(got, fmt.Sprintf("uid=%d ", peerUIDNobody)) || strings.Contains(got, "err=<nil>") ||
		!strings.Contains(got, `"permissionDecision":"deny"`) {
		t.Errorf("a client of uid %d got an answer: %s", peerUIDNobody, got)
	}
	mu.Lock()
	n := len(asked)
	mu.Unlock()
	if n != 0 {
		t.Fatalf("a request from uid %d asked %d gate(s): %q", peerUIDNobody, n, asked)
	}

	got = run(os.Geteuid())
	if !strings.Contains(got, "err=<nil>") || !strings.Contains(got, `"permissionDecision":"allow"`) {
		t.Errorf("a client of this uid, with the token, was not answered: %s", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 {
		t.Errorf("%d gate(s) asked for the request of this uid, want 1", len(asked))
	}
}
