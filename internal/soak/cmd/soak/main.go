// Command soak is the crash soak behind scripts/soak: it builds looprig,
// runs N trials of a chatty `looprig run` SIGKILLed at a random moment,
// restores, and checks that nothing acknowledged was lost (see package
// looprig/internal/soak). Its last line is always
//
//	soak: N trials, L lost, F failed
//
// and it exits 0 only when L and F are 0. With --hosts the session lives
// in a background host and each trial SIGKILLs either the run (the
// client) or the host (see package looprig/internal/soak, hosts.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"looprig/internal/soak"
)

func main() {
	trials := flag.Int("trials", 200, "number of kill trials")
	perSession := flag.Int("per-session", 5, "consecutive trials that share one session")
	within := flag.Duration("kill-within", 0, "kill each run at a random moment within this long of its start (0: calibrate)")
	input := flag.String("input", soak.DefaultInput, "the turn each run submits")
	seed := flag.Uint64("seed", 0, "seed of the kill moments (0: random)")
	binary := flag.String("binary", "", "looprig binary to drive (default: build the module at the current directory)")
	keep := flag.Bool("keep", false, "keep the work directory (store, acknowledgement files)")
	quiet := flag.Bool("quiet", false, "print only failures and the summary")
	hosts := flag.Bool("hosts", false, "run through hosts: the session lives in a background host; each trial kills the client or the host")
	flag.Parse()

	dir, err := os.MkdirTemp("", "looprig-soak-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	code := run(dir, *binary, soak.Config{Trials: *trials, PerSession: *perSession, KillWithin: *within,
		Input: *input, Seed: *seed, Hosts: *hosts}, *quiet)
	if *keep {
		fmt.Fprintln(os.Stderr, "soak: kept", dir)
	} else {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

func run(dir, binary string, cfg soak.Config, quiet bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if binary == "" {
		binary = filepath.Join(dir, "looprig")
		build := exec.Command("go", "build", "-o", binary, ".")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "soak: build looprig:", err)
			fmt.Printf("soak: %d trials, 0 lost, %d failed\n", 0, cfg.Trials)
			return 1
		}
	}
	cfg.Binary, cfg.Dir = binary, filepath.Join(dir, "work")
	if !quiet {
		cfg.Log = os.Stdout
	}
	res, err := soak.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
	}
	for _, f := range res.Failures {
		fmt.Println("soak: FAILED", f)
	}
	if cfg.Hosts {
		fmt.Printf("soak: %d clients killed, %d hosts killed (%d of whose runs started a new host), %d hosts stopped, %d runs ended before the kill, %d sessions, %d acknowledgements checked, %v\n",
			res.KilledClients, res.KilledHosts, res.FellBack, res.Stopped, res.Completed, res.Sessions, res.Acked, res.Elapsed.Round(time.Second))
	} else {
		fmt.Printf("soak: %d runs killed, %d ended before the kill, %d sessions, %d acknowledgements checked, %v\n",
			res.Killed, res.Completed, res.Sessions, res.Acked, res.Elapsed.Round(time.Second))
	}
	fmt.Println(res.Summary())
	if err != nil || res.Lost > 0 || res.Failed > 0 || res.Trials < cfg.Trials {
		return 1
	}
	return 0
}
