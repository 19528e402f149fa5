package checkpoint

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"looprig/rig/storage/memstore"
)

// Benchmarks time the package's operation and, in the same iterations, a
// baseline doing the same work another way; they report both (ms, MB/s)
// and their ratio. They assert nothing about time.
//
//	go test -run '^$' -bench . -count 5 ./rig/checkpoint/

const (
	benchFiles    = 10000
	benchFileSize = 2 << 10 // 10k × 2 KiB ≈ 20 MB
)

// benchTree writes benchFiles files of benchFileSize in 100 directories,
// backdated out of the racy window, and returns the root and total bytes.
func benchTree(b *testing.B) (string, int64) {
	b.Helper()
	root := filepath.Join(b.TempDir(), "ws")
	for i := 0; i < benchFiles; i++ {
		content := randomBytes(benchFileSize, int64(i))
		write(b, root, fmt.Sprintf("d%02d/f%05d.dat", i%100, i), string(content), 0o644)
	}
	backdate(b, root)
	return root, benchFiles * benchFileSize
}

// sha256Tree is the baseline: walk root and hash every regular file.
func sha256Tree(root string) error {
	buf := make([]byte, 64<<10)
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		_, err = io.CopyBuffer(h, f, buf)
		return err
	})
}

func haveTools(names ...string) bool {
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			return false
		}
	}
	return true
}

type timer struct {
	total time.Duration
	n     int
}

func (t *timer) run(b *testing.B, f func() error) {
	b.Helper()
	start := time.Now()
	if err := f(); err != nil {
		b.Fatal(err)
	}
	t.total += time.Since(start)
	t.n++
}

func (t *timer) ms() float64 { return float64(t.total.Microseconds()) / 1000 / float64(t.n) }

func (t *timer) mbps(bytes int64) float64 {
	return float64(bytes) / 1e6 / (t.total.Seconds() / float64(t.n))
}

// BenchmarkTakeFirst: a first Take (no index, empty store) of the tree
// into memstore, against walking it and sha256-hashing every file, and
// against tar -c . | sha256sum.
func BenchmarkTakeFirst(b *testing.B) {
	root, size := benchTree(b)
	ctx := context.Background()
	useTar := haveTools("sh", "tar", "sha256sum")
	var take, hash, tar timer
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		take.run(b, func() error {
			_, err := Take(ctx, memstore.New(), root, Options{})
			return err
		})
		b.StopTimer()
		hash.run(b, func() error { return sha256Tree(root) })
		if useTar {
			tar.run(b, func() error {
				cmd := exec.Command("sh", "-c", "tar -c . | sha256sum")
				cmd.Dir = root
				return cmd.Run()
			})
		}
		b.StartTimer()
	}
	b.ReportMetric(take.ms(), "take-ms")
	b.ReportMetric(take.mbps(size), "take-MB/s")
	b.ReportMetric(hash.ms(), "sha256walk-ms")
	b.ReportMetric(hash.mbps(size), "sha256walk-MB/s")
	b.ReportMetric(take.ms()/hash.ms(), "take/sha256walk")
	if useTar {
		b.ReportMetric(tar.ms(), "tar|sha256sum-ms")
		b.ReportMetric(take.ms()/tar.ms(), "take/tar|sha256sum")
	}
}

// BenchmarkTakeUnchanged: a Take of the unchanged tree given the previous
// Take's index, against a first Take of it, in the same iterations.
func BenchmarkTakeUnchanged(b *testing.B) {
	root, size := benchTree(b)
	ctx := context.Background()
	blobs := memstore.New()
	prev, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		b.Fatal(err)
	}
	var again, first timer
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		again.run(b, func() error {
			res, err := Take(ctx, blobs, root, Options{Index: prev.Index})
			if err == nil && res.BytesRead != 0 {
				err = fmt.Errorf("unchanged tree: %d bytes read", res.BytesRead)
			}
			return err
		})
		b.StopTimer()
		first.run(b, func() error {
			_, err := Take(ctx, memstore.New(), root, Options{})
			return err
		})
		b.StartTimer()
	}
	b.ReportMetric(again.ms(), "indexed-ms")
	b.ReportMetric(first.ms(), "first-ms")
	b.ReportMetric(first.mbps(size), "first-MB/s")
	b.ReportMetric(again.ms()/first.ms(), "indexed/first")
}

// BenchmarkMaterialize: Materialize of the tree from memstore (verifying
// every blob, fsyncing every file) against tar -x of the same tree from
// an archive file (which neither verifies nor fsyncs).
func BenchmarkMaterialize(b *testing.B) {
	root, size := benchTree(b)
	ctx := context.Background()
	blobs := memstore.New()
	res, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		b.Fatal(err)
	}
	work := b.TempDir()
	useTar := haveTools("tar")
	archive := filepath.Join(work, "tree.tar")
	if useTar {
		cmd := exec.Command("tar", "-cf", archive, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("tar -c: %v: %s", err, out)
		}
	}
	var mat, tar timer
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := filepath.Join(work, fmt.Sprintf("m%d", i))
		mat.run(b, func() error { return Materialize(ctx, blobs, res.Manifest, out, nil) })
		b.StopTimer()
		if useTar {
			x := filepath.Join(work, fmt.Sprintf("x%d", i))
			if err := os.Mkdir(x, 0o755); err != nil {
				b.Fatal(err)
			}
			tar.run(b, func() error { return exec.Command("tar", "-xf", archive, "-C", x).Run() })
			os.RemoveAll(x)
		}
		os.RemoveAll(out)
		b.StartTimer()
	}
	b.ReportMetric(mat.ms(), "materialize-ms")
	b.ReportMetric(mat.mbps(size), "materialize-MB/s")
	if useTar {
		b.ReportMetric(tar.ms(), "tar-x-ms")
		b.ReportMetric(tar.mbps(size), "tar-x-MB/s")
		b.ReportMetric(mat.ms()/tar.ms(), "materialize/tar-x")
	}
}
