package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
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
	path := os.Getenv(helperSockEnv)
	ln, err := Listen(path, true)
	if err != nil {
		rep.Fail(err)
		return 1
	}
	rep.Ready(Ready{Session: s.SessionID().String(), PID: os.Getpid(), Epoch: s.Epoch(), Socket: path, Created: true})
	if err := Serve(ctx, s, store, ln); err != nil {
		return 1
	}
	return 0
}

const helperWorkEnv = "LOOPRIG_HOST_TEST_WORK"

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
	sock := filepath.Join(privateDir(t), "s.sock")
	rd, err := startHelper(t, "serve", helperSockEnv+"="+sock, helperWorkEnv+"="+t.TempDir())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if rd.Socket != sock || rd.PID <= 0 || rd.Session == "" || !rd.Created || rd.Epoch == 0 {
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
	deadline := time.Now().Add(waitTimeout)
	for syscall.Kill(rd.PID, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("host %d still exists after shutdown", rd.PID)
		}
		time.Sleep(10 * time.Millisecond)
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
	if got.Type != want.Type || got.Kind != want.Kind || got.Remedy != want.Remedy || got.Stage != want.Stage {
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
