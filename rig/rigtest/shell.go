package rigtest

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"looprig/internal/testexec"
	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// shellCases pin which shell runs a session's turns (Profile.Shell, else
// /bin/sh), that the manifest records it, that a restore under another
// shell is drift like a changed term, and that sessions recorded before
// the manifest named a shell restore as having run in /bin/sh.
var shellCases = []testCase{
	{"ProfileShellRunsTurns", testProfileShellRunsTurns},
	{"DefaultShellIsBinSh", testDefaultShellIsBinSh},
	{"InvalidShellRefused", testInvalidShellRefused},
	{"ShellChangeIsDrift", testShellChangeIsDrift},
	{"LegacyManifestRestoresWithBinSh", testLegacyManifestShell},
	{"LegacyFingerprintRestoresWithBinSh", testLegacyFingerprintShell},
}

// bashProfile is the default profile with /bin/bash as its shell; the test
// is skipped where bash is missing.
func bashProfile(t *testing.T) rig.Profile {
	t.Helper()
	if err := engine.CheckShell("/bin/bash"); err != nil {
		t.Skipf("no bash here: %v", err)
	}
	p := rig.DefaultProfile()
	p.Shell = "/bin/bash"
	return p
}

// otherShell is an executable file that is not /bin/sh but runs it, with
// OTHERSH=yes in its environment.
func otherShell(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "othersh")
	testexec.WriteExecutable(t, path, "#!/bin/sh\nOTHERSH=yes exec /bin/sh \"$@\"\n")
	return path
}

// recordedShell is the shell session id's SessionStarted manifest names.
func recordedShell(t *testing.T, e *env, id uuid.UUID) string {
	t.Helper()
	started, _ := find[event.SessionStarted](readJournal(t, e.raw, id))
	if len(started) != 1 {
		t.Fatalf("%d SessionStarted records, want 1", len(started))
	}
	return started[0].Manifest["shell"]
}

// A profile's shell runs its turns: bash's $BASH_VERSION is set. The
// manifest, the status and the catalog entry name it.
func testProfileShellRunsTurns(t *testing.T, e *env) {
	p := bashProfile(t)
	s := e.newSession(e.define(rig.WithProfile(p)))
	ti := runTurn(t, s, `echo "bash=[$BASH_VERSION]"`)
	out := turnOutput(readJournal(t, e.raw, s.SessionID()), ti.ID)
	if !strings.Contains(out, "bash=[") || strings.Contains(out, "bash=[]") {
		t.Errorf("turn output %q, want a bash version", out)
	}
	if got := recordedShell(t, e, s.SessionID()); got != p.Shell {
		t.Errorf("manifest shell %q, want %q", got, p.Shell)
	}
	if got := s.Status().Shell; got != p.Shell {
		t.Errorf("Status().Shell %q, want %q", got, p.Shell)
	}
	c, err := rig.ReadCatalog(t.Context(), e.raw, s.SessionID().String())
	if err != nil || c.Shell != p.Shell {
		t.Errorf("catalog entry %+v, %v; want shell %q", c, err, p.Shell)
	}
}

// A profile without a shell runs its turns in /bin/sh, and records it.
func testDefaultShellIsBinSh(t *testing.T, e *env) {
	s := e.newSession(e.define())
	ti := runTurn(t, s, `echo "zero=$0"`)
	if out := turnOutput(readJournal(t, e.raw, s.SessionID()), ti.ID); !strings.Contains(out, "zero=/bin/sh") {
		t.Errorf("turn output %q, want zero=/bin/sh", out)
	}
	if got := recordedShell(t, e, s.SessionID()); got != "/bin/sh" {
		t.Errorf("manifest shell %q, want /bin/sh", got)
	}
}

// Define refuses a shell that is not the absolute path of an executable
// file: *InvalidProfileError{shell} wrapping *engine.ShellError.
func testInvalidShellRefused(t *testing.T, e *env) {
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, []byte("echo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, shell := range []string{"bash", plain, filepath.Join(t.TempDir(), "missing"), t.TempDir()} {
		p := rig.DefaultProfile()
		p.Shell = shell
		_, err := rig.Define(append(baseOptions(e.fs, e.ws), rig.WithProfile(p))...)
		ip := as[*rig.InvalidProfileError](t, err, "Define with shell "+shell)
		se := as[*engine.ShellError](t, err, "Define with shell "+shell)
		if ip.Field != "shell" || se.Path != shell {
			t.Errorf("Define with shell %q: %v, want the shell field and path named", shell, err)
		}
	}
}

// A session created with one shell and restored under another drifts, at
// info level as a changed term does: the default decider adopts it and
// the restore journals the change; a decider that refuses drift reports
// it in RestoreRejectedError.
func testShellChangeIsDrift(t *testing.T, e *env) {
	id := stoppedSession(t, e, e.define())
	other := rig.DefaultProfile()
	other.Shell = otherShell(t)

	refuse := rig.DeciderFunc(func(context.Context, rig.Assessment) (rig.Decision, error) {
		return rig.Decision{Source: "test", Reason: "no drift"}, nil
	})
	_, err := e.define(rig.WithProfile(other), rig.WithDecider(refuse)).RestoreSession(t.Context(), id)
	rej := as[*rig.RestoreRejectedError](t, err, "restore under another shell, drift refused")
	want := event.Change{Field: "shell", Persisted: "/bin/sh", Live: other.Shell, Level: event.LevelInfo}
	if len(rej.Assessment.Changes) != 1 || rej.Assessment.Changes[0] != want {
		t.Fatalf("changes %+v, want [%+v]", rej.Assessment.Changes, want)
	}
	if !strings.Contains(rej.Error(), `shell "/bin/sh" -> "`+other.Shell+`" (info)`) {
		t.Errorf("RestoreRejectedError %q does not show the shell change", rej)
	}

	s := e.restore(e.define(rig.WithProfile(other)), id)
	checkAdopted(t, e, s, "default", "shell")
	if got := s.Restored().Adopted[0]; got != want {
		t.Errorf("adopted %+v, want %+v", got, want)
	}
	ti := runTurn(t, s, `echo "othersh=$OTHERSH"`)
	if out := turnOutput(readJournal(t, e.raw, id), ti.ID); !strings.Contains(out, "othersh=yes") {
		t.Errorf("turn after adopting %s printed %q", other.Shell, out)
	}
}

// legacySession writes a stopped session as a looprig that did not record
// the shell did: its SessionStarted is this version's, less the manifest's
// shell (and with fingerprintOnly, only the fingerprint of that manifest).
func legacySession(t *testing.T, e *env, fingerprintOnly bool) uuid.UUID {
	t.Helper()
	model := readJournal(t, e.raw, stoppedSession(t, e, e.define()))
	starts, _ := find[event.SessionStarted](model)
	loops, _ := find[event.LoopStarted](model)
	if len(starts) != 1 || len(loops) != 1 {
		t.Fatalf("model session: %s", describe(model))
	}
	started := starts[0]
	m := rig.Manifest(maps.Clone(started.Manifest))
	delete(m, "shell")
	delete(m, "shell_interactive") // recorded since later still
	started.Manifest, started.Fingerprint = m, m.Fingerprint()
	if fingerprintOnly {
		started.Manifest = nil
	}

	id := uuid.New()
	if err := os.Mkdir(filepath.Join(e.ws, id.String()), 0o700); err != nil {
		t.Fatal(err)
	}
	name := storage.SessionName(id.String())
	l, err := e.raw.Acquire(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(t.Context(), e.raw, name, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []struct {
		loop string
		ev   event.Event
	}{{"", started}, {loops[0].LoopID, loops[0]}, {"", event.SessionStopped{}}} {
		if _, err := j.AppendEvent(t.Context(), rec.loop, rec.ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	return id
}

// A session whose manifest has no shell ran in /bin/sh: restored under a
// profile whose shell is /bin/sh it adopts nothing, and its turns run in
// /bin/sh; under another shell the drift is from /bin/sh.
func testLegacyManifestShell(t *testing.T, e *env) {
	id := legacySession(t, e, false)
	s := e.restore(e.define(), id)
	if a := s.Restored().Adopted; len(a) != 0 {
		t.Fatalf("restore of a session without a recorded shell under /bin/sh adopted %+v, want nothing", a)
	}
	ti := runTurn(t, s, `echo "zero=$0"`)
	if out := turnOutput(readJournal(t, e.raw, id), ti.ID); !strings.Contains(out, "zero=/bin/sh") {
		t.Errorf("turn output %q, want zero=/bin/sh", out)
	}
	shutdown(t, s)

	id = legacySession(t, e, false)
	other := rig.DefaultProfile()
	other.Shell = otherShell(t)
	s = e.restore(e.define(rig.WithProfile(other)), id)
	want := event.Change{Field: "shell", Persisted: "/bin/sh", Live: other.Shell, Level: event.LevelInfo}
	if a := s.Restored().Adopted; len(a) != 1 || a[0] != want {
		t.Errorf("restore under %s adopted %+v, want [%+v]", other.Shell, a, want)
	}
}

// A fingerprint-only session recorded without a shell restores under a
// profile whose shell is /bin/sh; under another shell it is a
// ConfigMismatchError, as any change is.
func testLegacyFingerprintShell(t *testing.T, e *env) {
	id := legacySession(t, e, true)
	other := rig.DefaultProfile()
	other.Shell = otherShell(t)
	_, err := e.define(rig.WithProfile(other)).RestoreSession(t.Context(), id)
	var mm *rig.ConfigMismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("restore of a fingerprint-only session under another shell: %v, want *rig.ConfigMismatchError", err)
	}
	s := e.restore(e.define(), id)
	if a := s.Restored().Adopted; len(a) != 0 {
		t.Errorf("restore adopted %+v, want nothing", a)
	}
}
