package soak

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"looprig/internal/testbin"
)

// TestSoakShort is the short version of scripts/soak: 20 SIGKILL trials of
// the real binary, none of which may lose an acknowledged record or fail.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and SIGKILLs the real binary")
	}
	dir := t.TempDir()
	bin := testbin.Looprig(t)
	var log strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Binary: bin, Dir: filepath.Join(dir, "work"), Trials: 20, PerSession: 5, Log: &log})
	if err != nil {
		t.Fatalf("soak: %v\n%s", err, log.String())
	}
	t.Logf("%s (%d killed, %d ended by themselves, %d acknowledgements, kill window %v, %v)",
		res.Summary(), res.Killed, res.Completed, res.Acked, res.KillWithin, res.Elapsed.Round(time.Millisecond))
	if res.Trials != 20 || res.Lost != 0 || res.Failed != 0 || res.Killed != 20 {
		t.Fatalf("%s\n%s", res.Summary(), log.String())
	}
	if res.Acked == 0 {
		t.Fatalf("no acknowledgements were read: the side channel is broken\n%s", log.String())
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// TestSoakHostsShort is the short version of scripts/soak --hosts: a few
// trials, each killing the client or the host of a session live in a
// host; both kinds must happen, nothing may be lost or fail, and no host
// may be left running.
func TestSoakHostsShort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and SIGKILLs the real binary and its hosts")
	}
	dir := t.TempDir()
	bin := testbin.Looprig(t)
	// Short: a socket path holds at most 103 bytes, t.TempDir's are long.
	rt, err := os.MkdirTemp("", "lr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	if err := os.Chmod(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	// Whatever happens, no host of the store outlives the test.
	t.Cleanup(func() {
		s := &soaker{store: filepath.Join(work, "store")}
		if pids := s.killStrayHosts(); len(pids) > 0 {
			t.Errorf("hosts %v were still running after the soak (killed)", pids)
		}
	})
	const trials = 6
	var log strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Binary: bin, Dir: work, Trials: trials, PerSession: 3, Log: &log, Hosts: true, RuntimeDir: rt})
	if err != nil {
		t.Fatalf("soak: %v\n%s", err, log.String())
	}
	t.Logf("%s (%d clients and %d hosts killed, %d runs started a new host, %d hosts stopped, %d ended by themselves, %d acknowledgements, kill window %v, %v)",
		res.Summary(), res.KilledClients, res.KilledHosts, res.FellBack, res.Stopped, res.Completed, res.Acked,
		res.KillWithin, res.Elapsed.Round(time.Millisecond))
	if res.Trials != trials || res.Lost != 0 || res.Failed != 0 || res.Killed != trials ||
		res.KilledClients+res.KilledHosts != trials {
		t.Fatalf("%s\n%s", res.Summary(), log.String())
	}
	if res.KilledClients == 0 || res.KilledHosts == 0 {
		t.Fatalf("%d clients and %d hosts killed: every session must see both\n%s", res.KilledClients, res.KilledHosts, log.String())
	}
	if res.Acked == 0 {
		t.Fatalf("no acknowledgements were read: the side channel is broken\n%s", log.String())
	}
	if testing.Verbose() {
		t.Log(log.String())
	}
}

// The checks themselves must catch what they claim to.
func TestCheck(t *testing.T) {
	fence := func(seq, epoch uint64) record { return record{Seq: seq, Kind: "fence", Type: "fence", Epoch: epoch} }
	ev := func(seq uint64, typ, turn string) record {
		return record{Seq: seq, Kind: "event", Type: typ, TurnID: turn}
	}
	done := func(seq, epoch uint64) record {
		return record{Seq: seq, Kind: "event", Type: "RestoreDone", Epoch: epoch}
	}
	good := []record{
		fence(1, 1), ev(2, "SessionStarted", ""), ev(3, "TurnStarted", "a"), ev(4, "TurnOutput", "a"),
		fence(5, 3), ev(6, "RestoreStarted", ""), ev(7, "TurnInterrupted", "a"), done(8, 3),
	}
	acked := map[uint64]string{3: "TurnStarted", 4: "TurnOutput"}
	if lost, err := check(good, acked, 3); lost != 0 || err != nil {
		t.Fatalf("good journal: lost %d, %v", lost, err)
	}
	tests := []struct {
		name  string
		recs  []record
		acked map[uint64]string
		lost  int
		in    string
	}{
		{"acked record missing", good[:3], map[uint64]string{4: "TurnOutput"}, 1, "missing"},
		{"acked record changed", good, map[uint64]string{4: "TurnDone"}, 1, "acknowledged 4 TurnDone"},
		{"gap", append(append([]record{}, good[:2]...), good[3:]...), nil, 0, "not contiguous"},
		{"turn never ends", append(append([]record{}, good[:6]...), done(7, 3)), nil, 0, "no terminal record"},
		{"turn ends twice", append(append([]record{}, good...), ev(9, "TurnDone", "a")), nil, 0, "second terminal"},
		{"end without start", append(append([]record{}, good...), ev(9, "TurnFailed", "b")), nil, 0, "never started"},
		{"epoch goes back", []record{fence(1, 2), ev(2, "SessionStarted", ""), fence(3, 1), done(4, 1)}, nil, 0, "epoch 1 after epoch 2"},
		{"same epoch twice", []record{fence(1, 2), ev(2, "SessionStarted", ""), fence(3, 2), done(4, 2)}, nil, 0, "epoch 2 after epoch 2"},
		{"restore not committed", good[:7], nil, 0, "no RestoreDone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lost, err := check(tt.recs, tt.acked, 3)
			if tt.name == "epoch goes back" || tt.name == "same epoch twice" {
				lost, err = check(tt.recs, tt.acked, tt.recs[len(tt.recs)-1].Epoch)
			}
			if lost != tt.lost || err == nil || !strings.Contains(err.Error(), tt.in) {
				t.Fatalf("lost %d (want %d), err %v (want %q)", lost, tt.lost, err, tt.in)
			}
		})
	}
	// A failed restore's second fence at its own epoch, followed by
	// RestoreErrored, is what rig writes; it is accepted.
	refence := []record{fence(1, 1), ev(2, "SessionStarted", ""), fence(3, 2), fence(4, 2), ev(5, "RestoreErrored", ""),
		fence(6, 3), done(7, 3)}
	if _, err := check(refence, nil, 3); err != nil {
		t.Fatalf("re-fence before RestoreErrored refused: %v", err)
	}

	// A session live in a host since `new --detach` has no RestoreDone.
	zero := 0
	live := []record{fence(1, 1), ev(2, "SessionStarted", ""), ev(3, "TurnStarted", "a"), ev(4, "TurnOutput", "a"),
		{Seq: 5, Kind: "event", Type: "TurnDone", TurnID: "a", ExitCode: &zero}, ev(6, "TurnStarted", "b")}
	if _, err := checkJournal(live[:5], acked, 1, false); err != nil {
		t.Fatalf("live journal: %v", err)
	}
	if _, err := checkJournal(live[:5], acked, 1, true); err == nil || !strings.Contains(err.Error(), "no RestoreDone") {
		t.Fatalf("live journal checked as restored: %v", err)
	}
	turns := turnsAfter(live, 2)
	if len(turns) != 2 || turns[0].id != "a" || turns[0].end == nil || *turns[0].end.ExitCode != 0 || turns[1].end != nil {
		t.Fatalf("turnsAfter: %+v", turns)
	}
	if turns := turnsAfter(live, 3); len(turns) != 1 || turns[0].id != "b" {
		t.Fatalf("turnsAfter a tip past a's start: %+v", turns)
	}
}

func TestReadAcks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acks")
	os.WriteFile(path, []byte("3 TurnStarted\n4 TurnOutput\n"), 0o600)
	acked := map[uint64]string{}
	if n, err := readAcks(path, acked); n != 2 || err != nil || acked[4] != "TurnOutput" {
		t.Fatalf("readAcks: %d %v %v", n, err, acked)
	}
	os.WriteFile(path, []byte("4 TurnDone\n"), 0o600)
	if _, err := readAcks(path, acked); err == nil {
		t.Fatal("a seq acknowledged with two types was accepted")
	}
	os.WriteFile(path, []byte("5 TurnDo"), 0o600)
	if _, err := readAcks(path, map[uint64]string{}); err == nil {
		t.Fatal("half a line was accepted")
	}
}
