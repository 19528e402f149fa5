package benchmarks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The figure of a worktree per session (docs/ARCHITECTURE.md, "A worktree
// per session"): `looprig new --worktree` end to end in a repository of
// the 10k tree (ckptFiles files of ckptFileSize), against `git worktree
// add -b BRANCH PATH HEAD` of the same repository in the same run. Each
// round makes one of each, then removes both (untimed: looprig rm --yes,
// git worktree remove and git branch -D).
//
//	go test -run '^$' -bench NewWorktree -benchtime 1x -count 3 ./internal/benchmarks/
func BenchmarkNewWorktree(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	c := newCLIBench(b, "")
	repo := filepath.Join(b.TempDir(), "app")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		b.Fatal(err)
	}
	fillTree(b, repo)
	gitBench(b, repo, "init", "--quiet", "--initial-branch=main")
	gitBench(b, repo, "add", ".")
	gitBench(b, repo, "commit", "--quiet", "-m", "tree")
	rounds := pick(3, 9)
	var ours, theirs []float64
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			start := time.Now()
			out := c.runIn(b, repo, "new", "--worktree", "--json")
			ours = append(ours, float64(time.Since(start).Microseconds())/1e3)
			var v struct{ ID string }
			if err := json.Unmarshal(out, &v); err != nil {
				b.Fatal(err)
			}
			c.run(b, "rm", v.ID, "--yes")

			branch := fmt.Sprintf("bench/%d-%d", i, r)
			path := filepath.Join(filepath.Dir(repo), "app.worktrees", branch)
			start = time.Now()
			gitBench(b, repo, "worktree", "add", "--quiet", "-b", branch, path, "HEAD")
			theirs = append(theirs, float64(time.Since(start).Microseconds())/1e3)
			gitBench(b, repo, "worktree", "remove", path)
			gitBench(b, repo, "branch", "-D", branch)
		}
	}
	b.ReportMetric(medianOf(ours), "new-ms")
	b.ReportMetric(medianOf(theirs), "git-ms")
	b.ReportMetric(medianOf(ours)/medianOf(theirs), "new/git")
}

// runIn runs the built looprig in dir (run's, elsewhere).
func (c *cliBench) runIn(b *testing.B, dir string, args ...string) []byte {
	b.Helper()
	ctx, cancel := context.WithTimeout(bg, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"--store", c.store}, args...)...)
	cmd.Env, cmd.Dir = c.env, dir
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("looprig %v in %s: %v\n%s", args, dir, err, out)
	}
	return out
}

// gitBench runs git in dir, with an identity for its commits.
func gitBench(b *testing.B, dir string, args ...string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(bg, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com",
		"GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
