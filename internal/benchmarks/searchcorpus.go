package benchmarks

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"looprig/fsstore"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// The corpus of the search benchmarks (BenchmarkSearch here, and the
// engine comparison of internal/benchmarks/engines, a module of its own
// that imports this package): a store of sessions whose journals hold
// generated output. It is in a file that is not a test's so that the
// other module can build the same corpus.

// SearchCorpus is a generated store of sessions for the search
// benchmarks: log-like lines of a varied vocabulary, numbers and hex ids,
// and the rare word "EADDRINUSE" planted in a few lines of a few sessions.
type SearchCorpus struct {
	Dir          string      // the store
	IDs          []uuid.UUID // its sessions, in the order made
	JournalBytes int64       // the size of its journal files
	Lines        int         // the output lines generated
	Needles      int         // lines holding "EADDRINUSE"
}

// GenerateSearchCorpus makes, in a new store at dir, sessions sessions of
// one turn of lines generated output lines each. The lines are the same
// for the same sizes (a fixed seed).
func GenerateSearchCorpus(ctx context.Context, dir string, sessions, lines int) (*SearchCorpus, error) {
	st, err := fsstore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	c, err := GenerateSearchCorpusOn(ctx, st, st.WorkspacesDir(), sessions, lines)
	if err != nil {
		return nil, err
	}
	c.Dir = dir
	if c.JournalBytes, err = treeBytes(filepath.Join(dir, "ledgers")); err != nil {
		return nil, err
	}
	return c, nil
}

// GenerateSearchCorpusOn is GenerateSearchCorpus on any store (a NATS
// store: BenchmarkSearchNATS), its sessions' workspaces under workspaces;
// JournalBytes is then the bytes of the records appended (their frames
// and the store's own metadata not counted), Dir empty.
func GenerateSearchCorpusOn(ctx context.Context, st storage.Store, workspaces string, sessions, lines int) (*SearchCorpus, error) {
	r, err := rig.Define(rig.WithStore(st), rig.WithWorkspaces(workspaces), rig.WithProfile(rig.DemoProfile()))
	if err != nil {
		return nil, err
	}
	c := &SearchCorpus{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range sessions {
		s, err := r.NewSession(ctx, rig.WithTitle(fmt.Sprintf("search %d", i)))
		if err != nil {
			return nil, err
		}
		id, loop := s.SessionID(), s.LoopID()
		if err := s.Shutdown(ctx); err != nil {
			return nil, err
		}
		c.IDs = append(c.IDs, id)
		n, size, err := appendGeneratedTurn(ctx, st, id, loop, lines, rng, i%10 == 0)
		if err != nil {
			return nil, err
		}
		c.Needles += n
		c.Lines += lines
		c.JournalBytes += size
	}
	return c, nil
}

var (
	levels     = []string{"INFO", "INFO", "INFO", "DEBUG", "WARN", "error"}
	components = []string{"api", "worker", "scheduler", "db", "cache", "auth", "http", "grpc", "queue", "build"}
	syllables  = []string{"ka", "ro", "mi", "ten", "sul", "va", "dor", "pe", "lin", "gra", "tho", "zu", "mer", "qui", "bo", "nex"}
)

// genLine is one generated output line.
func genLine(rng *rand.Rand, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "2026-11-%02d %02d:%02d:%02d %s %s: ", 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60),
		levels[rng.IntN(len(levels))], components[rng.IntN(len(components))])
	for range 4 + rng.IntN(6) {
		for range 1 + rng.IntN(3) {
			b.WriteString(syllables[rng.IntN(len(syllables))])
		}
		b.WriteByte(' ')
	}
	fmt.Fprintf(&b, "id=%08x took %dms line %d", rng.Uint32(), rng.IntN(5000), n)
	return b.String()
}

// appendGeneratedTurn appends to session id a turn of n generated output
// lines, in TurnOutput records of 64 lines (as a turn's checkpoints hold
// many lines each); with needle, three of them hold "EADDRINUSE". It
// returns the needle lines written and the bytes of the records appended.
func appendGeneratedTurn(ctx context.Context, st storage.Store, id uuid.UUID, loop string, n int, rng *rand.Rand, needle bool) (needles int, size int64, err error) {
	// The records are encoded by a journal in memory, then appended to
	// the session's ledger in batches under its lease.
	ms := memstore.New()
	ml, err := ms.Acquire(ctx, "sessions/gen")
	if err != nil {
		return 0, 0, err
	}
	mj, err := journal.Open(ctx, ms, "sessions/gen", ml)
	if err != nil {
		return 0, 0, err
	}
	turn := uuid.NewString()
	if _, err := mj.AppendEvent(ctx, loop, event.TurnStarted{TurnID: turn, Index: 0, Input: "make test"}); err != nil {
		return 0, 0, err
	}
	var off int64
	for i := 0; i < n; {
		var text strings.Builder
		for k := 0; k < 64 && i < n; k, i = k+1, i+1 {
			line := genLine(rng, i)
			if needle && i%(n/3+1) == n/6 {
				line += " listen tcp :8080: bind: EADDRINUSE"
				needles++
			}
			text.WriteString(line + "\n")
		}
		if _, err := mj.AppendEvent(ctx, loop, event.TurnOutput{TurnID: turn, Offset: off, Text: text.String()}); err != nil {
			return 0, 0, err
		}
		off += int64(text.Len())
	}
	if _, err := mj.AppendEvent(ctx, loop, event.TurnDone{TurnID: turn}); err != nil {
		return 0, 0, err
	}
	payloads, err := ledgerPayloads(ctx, ms, "sessions/gen")
	if err != nil {
		return 0, 0, err
	}
	payloads = payloads[1:] // not its fence
	for _, p := range payloads {
		size += int64(len(p))
	}
	name := storage.SessionName(id.String())
	l, err := st.Acquire(ctx, name)
	if err != nil {
		return 0, 0, err
	}
	defer l.Release(ctx)
	j, err := journal.Open(ctx, st, name, l)
	if err != nil {
		return 0, 0, err
	}
	// In batches of 16 records, as a host's group commits append them (a
	// NATS store keeps a batch in one message, and reads a ledger's last
	// message whole to learn its tip).
	tip := j.Tip()
	for len(payloads) > 0 {
		k := min(16, len(payloads))
		if err := st.Append(ctx, name, tip, payloads[:k]...); err != nil {
			return 0, 0, err
		}
		tip += uint64(k)
		payloads = payloads[k:]
	}
	return needles, size, nil
}

// ledgerPayloads returns copies of every payload of a ledger.
func ledgerPayloads(ctx context.Context, led storage.Ledger, name string) ([][]byte, error) {
	c, err := led.Read(ctx, name, 0)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out [][]byte
	for c.Next() {
		out = append(out, bytes.Clone(c.Record().Payload))
	}
	return out, c.Err()
}

// treeBytes is the size of the files under dir.
func treeBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	return n, err
}
