package host

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"looprig/rig"
	"looprig/rig/explain"
	"looprig/rig/storage/memstore"
)

// startHelperMain is a host started by Start, in the test binary: "serve"
// serves a memstore session on the socket helperSockEnv names until it is
// shut down; "fail" reports a classified rig error; "exit" ends without a
// report.
func startHelperMain(mode string) int {
	rep, err := OpenReporter()
	if err != nil || rep == nil {
		return 9
	}
	switch mode {
	case "fail":
		rep.Fail(&rig.ProfileGoneError{Session: "0b5e", Profile: "gone", Known: []string{"default", "ci"}})
		return 1
	case "exit":
		return 3
	case "progress":
		// A restore that reports how far it is, then fails.
		for _, done := range []int64{0, 10, 40, 100} {
			rep.Materializing(done, 100)
			time.Sleep(150 * time.Millisecond)
		}
		rep.Fail(&rig.ProfileGoneError{Session: "0b5e", Profile: "gone", Known: []string{"default"}})
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	store := memstore.New()
	r, err := rig.Define(rig.WithStore(store), rig.WithProfile(gateProfile()), rig.WithWorkspaces(os.Getenv(helperWorkEnv)))
	if err != nil {
		rep.Fail(err)
		return 1
	}
	s, err := r.NewSession(ctx)
	if err != nil {
		rep.Fail(err)
		return 1
	}
	if err := Run(ctx, s, os.Getenv(helperKeyEnv), rep, Ready{Created: true}); err != nil {
		return 1
	}
	if !errors.Is(s.Err(), rig.ErrSessionClosed) && s.Err() != nil {
		return 2
	}
	return 0
}

const (
	helperWorkEnv = "LOOPRIG_HOST_TEST_WORK"
	helperKeyEnv  = "LOOPRIG_HOST_TEST_STORE_KEY"
)

func startHelper(t *testing.T, mode string, extra ...string) (Ready, error) {
	t.Helper()
	env := append(os.Environ(), helperEnv+"="+mode)
	env = append(env, extra...)
	return Start(wctx(t), StartSpec{Args: []string{"-test.run=^$"}, Env: env})
}

// A started host is in its own session (no controlling terminal: an SSH
// drop's SIGHUP never reaches it), reports where it serves, and is reaped
// when it exits.
func TestStartReadyDetached(t *testing.T) {
	rd := startServing(t)
	if rd.PID <= 0 || rd.Session == "" || !rd.Created || rd.Epoch == 0 {
		t.Fatalf("ready = %+v", rd)
	}
	sid, err := unix.Getsid(rd.PID)
	if err != nil {
		t.Fatal(err)
	}
	if sid != rd.PID {
		t.Errorf("host's session id = %d, want its own pid %d (setsid)", sid, rd.PID)
	}
	c, err := Dial(wctx(t), rd.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Hello().PID != rd.PID || c.Hello().Session != rd.Session {
		t.Fatalf("hello = %+v, ready = %+v", c.Hello(), rd)
	}
	if err := c.Shutdown(wctx(t)); err != nil {
		t.Fatal(err)
	}
	// Reaped: the pid disappears (a zombie would still answer kill 0).
	waitGone(t, rd.PID)
}

func startServing(t *testing.T) Ready {
	t.Helper()
	runtimeDir, err := os.MkdirTemp("", "lr") // short: a socket path holds 103 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runtimeDir) })
	if err := os.Chmod(runtimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", runtimeDir)
	rd, err := startHelper(t, "serve", helperKeyEnv+"=key-"+t.Name(), helperWorkEnv+"="+t.TempDir())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	dir, err := SocketDir("key-" + t.Name())
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := SocketPath(dir, rd.Session); rd.Socket != want {
		t.Fatalf("socket = %s, want %s", rd.Socket, want)
	}
	return rd
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("host %d still exists", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SIGTERM shuts a host's session down and removes its socket.
func TestRunStopsOnSignal(t *testing.T) {
	rd := startServing(t)
	if err := syscall.Kill(rd.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitGone(t, rd.PID)
	if _, err := os.Lstat(rd.Socket); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket after SIGTERM: %v, want it removed", err)
	}
	if _, err := Connect(wctx(t), "key-"+t.Name(), rd.Session); !errors.Is(err, ErrNotHosted) {
		t.Fatalf("Connect after SIGTERM: %v, want ErrNotHosted", err)
	}
}

// A host's classified failure reaches the client as the same explanation
// the client would have made of it in its own process.
func TestStartFailureExplained(t *testing.T) {
	_, err := startHelper(t, "fail")
	var re *RemoteError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v (%T), want *RemoteError", err, err)
	}
	got, want := explain.Explain(err), explain.Explain(&rig.ProfileGoneError{Session: "0b5e", Profile: "gone", Known: []string{"default", "ci"}})
	if got.Type != want.Type || got.Kind != want.Kind || got.Remedy != want.Remedy {
		t.Fatalf("explained = %+v, want %+v", got, want)
	}
	for _, f := range want.Fields {
		v, ok := got.Field(f.Name)
		if ss, isSlice := f.Value.([]string); isSlice {
			gs, _ := v.([]string)
			if !ok || !slices.Equal(gs, ss) {
				t.Errorf("field %s = %#v, want %#v", f.Name, v, f.Value)
			}
			continue
		}
		if !ok || v != f.Value {
			t.Errorf("field %s = %#v, want %#v", f.Name, v, f.Value)
		}
	}
}

func TestStartExitWithoutReport(t *testing.T) {
	_, err := startHelper(t, "exit")
	var ex *HostExitedError
	if !errors.As(err, &ex) || ex.Status != "exit status 3" {
		t.Fatalf("err = %v, want HostExitedError with exit status 3", err)
	}
}

// A socket left by a killed host is not a host.
func TestConnectStaleSocket(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", privateDir(t))
	dir, err := SocketDir("store-key")
	if err != nil {
		t.Fatal(err)
	}
	path, err := SocketPath(dir, "abc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Connect(wctx(t), "store-key", "abc"); !errors.Is(err, ErrNotHosted) {
		t.Fatalf("no socket: err = %v, want ErrNotHosted", err)
	}
	ln, err := Listen(path, false)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // the file stays, nobody listens
	if _, err := os.Lstat(path); err != nil {
		t.Fatal(err)
	}
	if _, err := Connect(wctx(t), "store-key", "abc"); !errors.Is(err, ErrNotHosted) {
		t.Fatalf("stale socket: err = %v, want ErrNotHosted", err)
	}
}
