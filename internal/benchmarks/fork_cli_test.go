package benchmarks

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkForkCLI: `looprig fork ID --json` of a session whose workspace
// holds the 10k tree (fillTree, checkpointed at its turn's end), end to
// end (the built command, a directory store: the fork's checkpoint
// materialized into a new directory, durable), against `git worktree add`
// of a commit of the same tree in the same run (the checkout of 10k files
// into a new worktree). The two alternate, each timed alone; the fork and
// the worktree are removed, untimed, after each. Medians. Target: fork ≤
// 1.5× git worktree add.
func BenchmarkForkCLI(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("no git here")
	}
	c := newCLIBench(b, "[profiles.on]\ncheckpoint = \"turn\"\n")
	id, ws, _ := c.newSession(b, "on")
	fillTree(b, ws)
	c.run(b, "run", id, "--", "true")
	c.run(b, "wait", id, "--for", "idle") // its checkpoint is on record

	repo := filepath.Join(shortPrivateDir(b), "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		b.Fatal(err)
	}
	fillTree(b, repo)
	git := func(args ...string) {
		b.Helper()
		ctx, cancel := context.WithTimeout(bg, 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
			"-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "tree")
	trees := shortPrivateDir(b)

	rounds := pick(3, 9)
	var forkMs, gitMs []float64
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			start := time.Now()
			out := c.run(b, "fork", id, "--json")
			forkMs = append(forkMs, float64(time.Since(start).Microseconds())/1e3)
			var f struct {
				ID    string `json:"id"`
				Files int    `json:"files"`
			}
			if err := json.Unmarshal(out, &f); err != nil || f.Files != ckptFiles {
				b.Fatalf("fork --json: %s, %v; want %d files", out, err, ckptFiles)
			}
			c.run(b, "rm", f.ID, "--yes")

			dir := filepath.Join(trees, "wt")
			start = time.Now()
			git("worktree", "add", "-q", "--detach", dir, "HEAD")
			gitMs = append(gitMs, float64(time.Since(start).Microseconds())/1e3)
			git("worktree", "remove", "--force", dir)
		}
	}
	b.ReportMetric(medianOf(forkMs), "fork-ms")
	b.ReportMetric(medianOf(gitMs), "git-worktree-add-ms")
	b.ReportMetric(medianOf(forkMs)/medianOf(gitMs), "fork/git")
}
