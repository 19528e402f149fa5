package rigtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/checkpoint"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// forkCases: ForkSession (rig/fork.go) makes a session whose workspace is
// a source's checkpoint after a turn, and whose journal says so.
var forkCases = []testCase{
	{"FilesAsAtTheTurn", testForkFilesAsAtTheTurn},
	{"RmOfTheSourceKeepsTheForksBlobs", testForkOutlivesSource},
	{"Refusals", testForkRefusals},
	{"IntoAnEmptyRoot", testForkIntoEmptyRoot},
	{"AgentConversation", testForkAgentConversation},
}

// forkTurns are three turns: files with modes, a nested directory and an
// inner link; then one changed, one made executable, one deleted; then a
// directory deleted and a file made.
var forkTurns = []string{
	`printf 'one\n' > a.txt && printf 'keep\n' > b.txt && mkdir -p d/e && printf 'deep\n' > d/e/f.txt && ln -s a.txt link`,
	`printf 'two\n' > a.txt && chmod 755 b.txt && rm d/e/f.txt && printf 'new\n' > n.txt`,
	`rm -r d && printf 'three\n' > c.txt`,
}

// forkSource runs forkTurns in a new session of r and returns it with the
// tree of its workspace after each turn.
func forkSource(t *testing.T, e *env, r *rig.Rig) (*rig.Session, []map[string]string) {
	t.Helper()
	s := e.newSession(r)
	var trees []map[string]string
	for _, in := range forkTurns {
		runTurn(t, s, in)
		trees = append(trees, treeOf(t, s.Workspace()))
	}
	return s, trees
}

func fork(t *testing.T, e *env, r *rig.Rig, source uuid.UUID, turn string, opts ...rig.SessionOption) (*rig.Session, *rig.Fork) {
	t.Helper()
	f, info, err := r.ForkSession(waitCtx(t), source, turn, opts...)
	if err != nil {
		t.Fatalf("ForkSession(%s, %q): %v", source, turn, err)
	}
	shutdownAtCleanup(t, f)
	return f, info
}

func sameFiles(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s is %q, want %q", what, k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s (%s) should not be there", what, k, v)
		}
	}
}

// A fork of a live source at its last turn (the default) and at an
// earlier one holds the files as they were after that turn (contents,
// modes, links; what later turns deleted is there, what they made is
// not); the source and its journal are unchanged; the fork's journal
// begins by saying where it came from and journals that checkpoint as its
// workspace pointer; its catalog entry and fold say so too; its turns run
// in its own files.
func testForkFilesAsAtTheTurn(t *testing.T, e *env) {
	r := e.define()
	src, trees := forkSource(t, e, r)
	sid := src.SessionID()
	before := tip(t, e.raw, sid)

	for _, c := range []struct {
		turn  string
		index int
	}{{"", 2}, {"0", 0}, {"#1", 1}} {
		f, info := fork(t, e, r, sid, c.turn, rig.WithTitle("fork "+c.turn))
		if f.Workspace() == src.Workspace() || !strings.HasPrefix(f.Workspace(), e.ws) {
			t.Fatalf("fork at %q works in %s (source %s)", c.turn, f.Workspace(), src.Workspace())
		}
		sameFiles(t, "fork at "+c.turn, treeOf(t, f.Workspace()), trees[c.index])
		tc, err := rig.FindTurnCheckpoints(t.Context(), e.raw, sid, c.turn)
		if err != nil {
			t.Fatal(err)
		}
		want := event.ForkedFrom{Session: sid.String(), TurnIndex: c.index, TurnID: tc.TurnID, Checkpoint: tc.After.String()}
		if info.From != want || info.Files == 0 {
			t.Errorf("Fork %+v; want from %+v", info, want)
		}
		recs := readJournal(t, e.raw, f.SessionID())
		started, _ := find[event.SessionStarted](recs)
		cps, _ := find[event.WorkspaceCheckpointed](recs)
		if len(started) != 1 || started[0].ForkedFrom == nil || *started[0].ForkedFrom != want {
			t.Errorf("the fork's SessionStarted %+v; want forked_from %+v", started, want)
		}
		if len(cps) != 1 || cps[0].Manifest != want.Checkpoint || cps[0].Trigger != event.TriggerFork || cps[0].Files != info.Files {
			t.Errorf("the fork's checkpoints %+v; want the source's %s, trigger fork", cps, want.Checkpoint)
		}
		if st := f.Status(); st.ForkedFrom == nil || *st.ForkedFrom != want || st.Checkpoint == nil || st.Checkpoint.Manifest != want.Checkpoint {
			t.Errorf("the fork's fold: forked from %+v, checkpoint %+v", st.ForkedFrom, st.Checkpoint)
		}
		if cat, err := rig.ReadCatalog(t.Context(), e.raw, f.SessionID().String()); err != nil || cat.ForkedFrom == nil || *cat.ForkedFrom != want || cat.Title != "fork "+c.turn {
			t.Errorf("the fork's catalog entry: %+v, %v", cat.ForkedFrom, err)
		}
		ti := runTurn(t, f, `cat a.txt && printf 'forked\n' > mine.txt`)
		if out := turnOutput(readJournal(t, e.raw, f.SessionID()), ti.ID); !strings.Contains(out, strings.TrimSpace(map[int]string{0: "one", 1: "two", 2: "two"}[c.index])) {
			t.Errorf("the fork's turn read a.txt as %q", out)
		}
		shutdown(t, f)
	}
	sameFiles(t, "the source after the forks", treeOf(t, src.Workspace()), trees[2])
	if after := tip(t, e.raw, sid); after != before {
		t.Errorf("the source's journal grew from %d to %d records while it was forked", before, after)
	}
	if src.Status().ForkedFrom != nil {
		t.Error("the source says it was forked from something")
	}
}

// rm of the source (DeleteSession, FreeSessionBlobs) frees none of the
// blobs of the fork's checkpoint: the fork, its workspace gone, restores
// with its files.
func testForkOutlivesSource(t *testing.T, e *env) {
	r := e.define()
	src, trees := forkSource(t, e, r)
	f, info := fork(t, e, r, src.SessionID(), "1")
	fid, dir := f.SessionID(), f.Workspace()
	shutdown(t, src)
	d, err := rig.DeleteSession(t.Context(), e.raw, e.ws, src.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	freed, err := rig.FreeSessionBlobs(t.Context(), e.raw, []rig.DeletedSession{d})
	if err != nil || len(freed) != 1 || freed[0].Deleted == 0 || freed[0].Shared == 0 {
		t.Fatalf("FreeSessionBlobs: %+v, %v; want the source's own blobs deleted, the fork's kept", freed, err)
	}
	md, err := storage.ParseDigest(info.From.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := checkpoint.References(t.Context(), e.raw, md)
	if err != nil {
		t.Fatalf("the fork's checkpoint after rm of its source: %v", err)
	}
	for _, b := range refs {
		if _, err := e.raw.StatBlob(t.Context(), b); err != nil {
			t.Errorf("blob %s of the fork's checkpoint: %v", b, err)
		}
	}
	shutdown(t, f)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	f2 := e.restore(r, fid)
	sameFiles(t, "the fork restored after rm of its source", treeOf(t, f2.Workspace()), trees[1])
	if res, err := rig.SweepBlobs(t.Context(), e.raw, rig.SweepOptions{}); err != nil || res.Deleted != 0 {
		t.Errorf("sweep: %+v, %v; want nothing left to delete", res, err)
	}
}

// A turn that does not exist, one whose checkpoint was skipped (over
// checkpoint_max), a session with no turn, and an exclusive root that is
// not empty are refused with *rig.ForkError, saying why; nothing is
// created.
func testForkRefusals(t *testing.T, e *env) {
	r := e.define()
	src, _ := forkSource(t, e, r)
	fe := func(err error, what, says string) {
		t.Helper()
		f := as[*rig.ForkError](t, err, what)
		if !strings.Contains(f.Error(), says) {
			t.Errorf("%s: %q; want it to say %q", what, f.Error(), says)
		}
	}
	_, _, err := r.ForkSession(t.Context(), src.SessionID(), "9")
	fe(err, "turn 9", "has no turn 9")
	empty := e.newSession(r)
	_, _, err = r.ForkSession(t.Context(), empty.SessionID(), "")
	fe(err, "no turn", "no turn that ended")

	p := rig.DefaultProfile()
	p.CheckpointMax = 1
	big := e.newSession(e.define(rig.WithProfile(p)))
	runTurn(t, big, `printf 'big\n' > big`)
	_, _, err = r.ForkSession(t.Context(), big.SessionID(), "")
	fe(err, "a skipped checkpoint", "skipped")

	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "mine"), []byte("the user's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	xp := exclusiveProfile(root)
	xp.Checkpoint = rig.CheckpointTurn
	_, _, err = e.define(rig.WithProfile(xp)).ForkSession(t.Context(), src.SessionID(), "")
	fe(err, "a root that is not empty", "not an empty directory")
	if b, err := os.ReadFile(filepath.Join(root, "mine")); err != nil || string(b) != "the user's\n" {
		t.Errorf("the root's file after the refusal: %q, %v", b, err)
	}
	list, err := rig.ListSessions(t.Context(), e.raw)
	if err != nil || len(list) != 3 {
		t.Errorf("sessions after the refusals: %d, %v; want the 3 made here", len(list), err)
	}
}

// A fork into an exclusive root that does not exist yet (or is empty)
// materializes the checkpoint there, and holds the root.
func testForkIntoEmptyRoot(t *testing.T, e *env) {
	r := e.define()
	src, trees := forkSource(t, e, r)
	root := filepath.Join(t.TempDir(), "fork")
	xp := exclusiveProfile(root)
	xp.Checkpoint = rig.CheckpointTurn
	xr := e.define(rig.WithProfile(xp))
	f, _ := fork(t, e, xr, src.SessionID(), "0")
	if f.Workspace() != root {
		t.Fatalf("the fork works in %s, want %s", f.Workspace(), root)
	}
	sameFiles(t, "fork into a new root", treeOf(t, root), trees[0])
	_, _, err := xr.ForkSession(t.Context(), src.SessionID(), "0")
	as[*rig.WorkspaceRootBusyError](t, err, "a second fork into the held root")
}

// forkingNotes is the notes agent (agent.go) whose transcripts can be
// forked: its lines name no conversation, so they are copied as they are.
type forkingNotes struct{ notesAgent }

func (a *forkingNotes) ForkLine(line []byte, from, to string) []byte { return line }

// An agent fork's conversation is a copy of the source's as it was at the
// turn, under a new id, which the fork's first turn resumes; the source's
// conversation goes on unchanged. An agent whose transcripts cannot be
// copied starts a new conversation, and the Fork says why.
func testForkAgentConversation(t *testing.T, e *env) {
	home := t.TempDir()
	a := &forkingNotes{notesAgent{home: home}}
	p := rig.Profile{Name: "agent", Engine: "notes", Placement: rig.PlacementSession}
	r := e.define(rig.WithProfile(p), rig.WithEngine("notes", func(rig.Profile) (engine.Engine, error) { return a, nil }))
	src := e.newSession(r)
	for _, in := range []string{"first", "second", "third"} {
		runTurn(t, src, in)
	}
	f, info := fork(t, e, r, src.SessionID(), "1")
	if !info.ConversationForked || info.Conversation == "" || info.Conversation == src.Status().Conversation.ID || info.From.Conversation != src.Status().Conversation.ID {
		t.Fatalf("Fork %+v; want a new conversation forked from %s", info, src.Status().Conversation.ID)
	}
	ti := runTurn(t, f, "in the fork")
	if out := turnOutput(readJournal(t, e.raw, f.SessionID()), ti.ID); out != "resume=true turns=2\n" {
		t.Errorf("the fork's first turn saw %q; want the conversation as after turn 1", out)
	}
	path, _ := a.TranscriptPath(f.Workspace(), info.Conversation)
	if b, err := os.ReadFile(path); err != nil || string(b) != "first\nsecond\nin the fork\n" {
		t.Errorf("the fork's transcript: %q, %v", b, err)
	}
	ti = runTurn(t, src, "fourth")
	if out := turnOutput(readJournal(t, e.raw, src.SessionID()), ti.ID); out != "resume=true turns=3\n" {
		t.Errorf("the source's next turn saw %q; want its own conversation, unchanged", out)
	}

	plain := &notesAgent{home: home}
	pr := e.define(rig.WithProfile(p), rig.WithEngine("notes", func(rig.Profile) (engine.Engine, error) { return plain, nil }))
	g, ginfo := fork(t, e, pr, src.SessionID(), "")
	if ginfo.ConversationForked || !strings.Contains(ginfo.Fresh, "cannot be forked") {
		t.Errorf("fork by an agent that cannot copy transcripts: %+v", ginfo)
	}
	ti = runTurn(t, g, "fresh")
	if out := turnOutput(readJournal(t, e.raw, g.SessionID()), ti.ID); out != "resume=false turns=0\n" {
		t.Errorf("its first turn saw %q; want a new conversation", out)
	}
}
