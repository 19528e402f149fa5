package benchmarks

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"looprig/natsstore"
	"looprig/natsstore/embedded"
	"looprig/rig"
	"looprig/rig/checkpoint"
	"looprig/rig/storage"
)

// Workspace checkpoints on the stores users run (a directory store, an
// embedded NATS server), each figure side by side with its baseline in the
// same iterations:
//
//	first checkpoint of 10,000 × 2 KiB   vs  tar -c . | sha256sum
//	unchanged checkpoint (indexed)       vs  a bare stat walk of the tree
//	one file changed                     vs  a bare stat walk
//	materialize                          vs  tar -x of the same tree
//
//	go test -run '^$' -bench Checkpoint -benchtime 1x -count 5 ./internal/benchmarks/

const (
	ckptFiles    = 10000
	ckptFileSize = 2 << 10
)

// ckptTree writes the benchmark's tree, backdated out of the racy window.
func ckptTree(b *testing.B) string {
	b.Helper()
	root := filepath.Join(b.TempDir(), "ws")
	buf := make([]byte, ckptFileSize)
	old := time.Now().Add(-time.Hour)
	for i := 0; i < ckptFiles; i++ {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i%100))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		rand.Read(buf)
		p := filepath.Join(dir, fmt.Sprintf("f%05d.dat", i))
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

// ckptStores are the stores a checkpoint benchmark runs on: a directory
// store and an embedded NATS server, each new for every call.
func ckptStores(b *testing.B) map[string]func() storage.Store {
	return map[string]func() storage.Store{
		"fsstore": func() storage.Store { return openStore(b, b.TempDir()) },
		"nats": func() storage.Store {
			srv, err := embedded.Start(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(srv.Shutdown)
			st, err := natsstore.Open(context.Background(), srv.URL(), natsstore.WithoutEnvCredentials(), natsstore.WithTimeout(time.Minute))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		},
	}
}

// statWalk is the baseline of an unchanged checkpoint: walk the tree and
// lstat every entry.
func statWalk(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		_, err = os.Lstat(p)
		return err
	})
}

func shell(dir, script string) error {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", script, err, out)
	}
	return nil
}

// timed runs f and adds its time to s. It first writes back what is
// dirty (untimed), so that one side does not pay for the writes of the
// side before it.
func timed(b *testing.B, s *side, f func() error) {
	b.Helper()
	unix.Sync()
	start := time.Now()
	if err := f(); err != nil {
		b.Fatal(err)
	}
	s.add(1, time.Since(start))
}

func msOf(s *side) float64 { return s.perOp() / 1e3 }

// BenchmarkCheckpointFirst: the first checkpoint of the tree into a new
// store, against tar -c . | sha256sum of the same tree.
func BenchmarkCheckpointFirst(b *testing.B) {
	root := ckptTree(b)
	for name, open := range ckptStores(b) {
		b.Run(name, func(b *testing.B) {
			var take, tar side
			for i := 0; i < b.N; i++ {
				st := open()
				timed(b, &take, func() error {
					_, err := checkpoint.Take(context.Background(), st, root, checkpoint.Options{})
					return err
				})
				timed(b, &tar, func() error { return shell(root, "tar -c . | sha256sum >/dev/null") })
			}
			b.ReportMetric(msOf(&take), "take-ms")
			b.ReportMetric(msOf(&tar), "tar|sha256sum-ms")
			b.ReportMetric(msOf(&tar)/msOf(&take), "throughput-vs-tar")
		})
	}
}

// BenchmarkCheckpointUnchanged: a checkpoint of the unchanged tree given
// the last one's index (as a session's next turn takes it), against a bare
// stat walk; and, of a tree with one file changed, against the same walk.
func BenchmarkCheckpointUnchanged(b *testing.B) {
	root := ckptTree(b)
	for name, open := range ckptStores(b) {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			st := open()
			prev, err := checkpoint.Take(ctx, st, root, checkpoint.Options{})
			if err != nil {
				b.Fatal(err)
			}
			ix := prev.Index
			var same, one, walk side
			var stored, storedOne int64
			for i := 0; i < b.N; i++ {
				timed(b, &same, func() error {
					res, err := checkpoint.Take(ctx, st, root, checkpoint.Options{Index: ix, IndexTrusted: true})
					if err == nil && (res.BytesRead != 0 || res.Manifest != ix.Manifest) {
						err = fmt.Errorf("unchanged tree: %d bytes read, manifest %s (was %s)", res.BytesRead, res.Manifest, ix.Manifest)
					}
					stored += res.BytesStored
					return err
				})
				p := filepath.Join(root, "d42", fmt.Sprintf("f%05d.dat", 42+100*(i%10)))
				// Content no checkpoint of any store has had (the tree is
				// shared by the stores' runs): stored, not found again.
				if err := os.WriteFile(p, []byte(fmt.Sprint("changed ", name, " ", i, " ", time.Now().UnixNano())), 0o644); err != nil {
					b.Fatal(err)
				}
				// Out of the racy window, as a file edited a while ago.
				old := time.Now().Add(-time.Hour + time.Duration(i)*time.Second)
				if err := os.Chtimes(p, old, old); err != nil {
					b.Fatal(err)
				}
				timed(b, &one, func() error {
					res, err := checkpoint.Take(ctx, st, root, checkpoint.Options{Index: ix, IndexTrusted: true})
					ix = res.Index
					storedOne += res.BytesStored
					return err
				})
				timed(b, &walk, func() error { return statWalk(root) })
			}
			b.ReportMetric(msOf(&same), "unchanged-ms")
			b.ReportMetric(msOf(&one), "one-changed-ms")
			b.ReportMetric(msOf(&walk), "statwalk-ms")
			b.ReportMetric(msOf(&same)/msOf(&walk), "unchanged/statwalk")
			b.ReportMetric(msOf(&one)/msOf(&walk), "one-changed/statwalk")
			b.ReportMetric(float64(stored)/float64(b.N), "unchanged-stored-B")
			b.ReportMetric(float64(storedOne)/float64(b.N), "one-changed-stored-B")
		})
	}
}

// BenchmarkCheckpointMaterialize: materializing the tree's checkpoint
// (every chunk verified, the tree made durable), against tar -x of the
// same tree from an archive file (which verifies nothing), alone and
// followed by a sync of its file system as Materialize does.
func BenchmarkCheckpointMaterialize(b *testing.B) {
	root := ckptTree(b)
	work := b.TempDir()
	archive := filepath.Join(work, "tree.tar")
	if err := shell(root, "tar -cf "+archive+" ."); err != nil {
		b.Fatal(err)
	}
	for name, open := range ckptStores(b) {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			st := open()
			res, err := checkpoint.Take(ctx, st, root, checkpoint.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var mat, tar, tarSync side
			for i := 0; i < b.N; i++ {
				out := filepath.Join(work, fmt.Sprintf("%s-m%d", name, i))
				timed(b, &mat, func() error { return checkpoint.Materialize(ctx, st, res.Manifest, out, nil) })
				for _, t := range []struct {
					s      *side
					script string
				}{{&tar, "tar -xf " + archive}, {&tarSync, "tar -xf " + archive + " && sync -f ."}} {
					x := filepath.Join(work, fmt.Sprintf("%s-x%d", name, i))
					if err := os.Mkdir(x, 0o755); err != nil {
						b.Fatal(err)
					}
					timed(b, t.s, func() error { return shell(x, t.script) })
					os.RemoveAll(x)
				}
				os.RemoveAll(out)
			}
			b.ReportMetric(msOf(&mat), "materialize-ms")
			b.ReportMetric(msOf(&tar), "tar-x-ms")
			b.ReportMetric(msOf(&tarSync), "tar-x+sync-ms")
			b.ReportMetric(msOf(&tar)/msOf(&mat), "speed-vs-tar-x")
		})
	}
}

// BenchmarkCheckpointGC: looprig gc (rig.SweepBlobs, the grace over: an
// injected clock an hour ahead) deleting 5,000 unreferenced blobs of 2
// KiB, against deleting the same number one at a time (stat, then
// DeleteBlob: the sweep before bulk deletes) in the same iterations.
// Target: ≤ 2 s on fsstore.
func BenchmarkCheckpointGC(b *testing.B) {
	const n = 5000
	for name, open := range ckptStores(b) {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			var sweep, one side
			for i := 0; i < b.N; i++ {
				st := open()
				put := func() []storage.Digest {
					ds := make([]storage.Digest, n)
					buf := make([]byte, 2<<10)
					for k := range ds {
						rand.Read(buf)
						info, err := st.PutBlob(ctx, bytes.NewReader(buf))
						if err != nil {
							b.Fatal(err)
						}
						ds[k] = info.Digest
					}
					return ds
				}
				put()
				later := func() time.Time { return time.Now().Add(time.Hour) }
				timed(b, &sweep, func() error {
					res, err := rig.SweepBlobs(ctx, st, rig.SweepOptions{Grace: rig.SweepGrace, Now: later})
					if err == nil && res.Deleted != n {
						err = fmt.Errorf("swept %+v, want %d deleted", res, n)
					}
					return err
				})
				ds := put()
				timed(b, &one, func() error {
					for _, d := range ds {
						if _, err := st.StatBlob(ctx, d); err != nil {
							return err
						}
						if err := st.DeleteBlob(ctx, d); err != nil {
							return err
						}
					}
					return nil
				})
			}
			b.ReportMetric(msOf(&sweep), "gc-ms")
			b.ReportMetric(msOf(&one), "one-by-one-ms")
			b.ReportMetric(msOf(&one)/msOf(&sweep), "speedup")
		})
	}
}
