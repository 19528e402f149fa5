package cli

import (
	"fmt"
	"sync"
	"sync/atomic"

	"looprig/rig"
	"looprig/rig/explain"
)

// allCrashedJSON is one line of restore --all-crashed --json: a session's
// outcome, "restored", "skipped" (another process restored it first, or
// holds it) or "failed" (with the error as every command prints it).
type allCrashedJSON struct {
	ID      string `json:"id"`
	ShortID string `json:"short_id"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	*restoreJSON
	Error *errorJSON `json:"error,omitempty"`
}

// errorJSON is an error as the JSON error objects print it.
type errorJSON struct {
	Type    string `json:"type"`
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// restoreAllCrashed restores every session listed crashed, each as
// 'restore ID' (or 'restore --detach ID') would, rig.RestoreAllWorkers at a
// time.
// Each restore checks, under the session's lease, that the session is
// still crashed (rig.OnlyIfCrashed), so two callers at once restore every
// session once: the other's finds it held or shut down, and skips it.
// Outcomes print as they complete; exit 3 if any failed.
func restoreAllCrashed(c *call) int {
	infos, err := rig.ListSessions(c.ctx, c.st)
	if err != nil {
		return c.fail(err)
	}
	var crashed []rig.SessionInfo
	for _, info := range infos {
		if info.State == rig.StateCrashed {
			crashed = append(crashed, info)
		}
	}
	if len(crashed) == 0 {
		if !c.json {
			fmt.Fprintln(c.stdout, "no crashed sessions")
		}
		return exitOK
	}
	c.onlyCrashed = true
	var (
		mu                        sync.Mutex // serializes the output
		restored, skipped, failed int
		next                      atomic.Int64
		wg                        sync.WaitGroup
	)
	report := func(info rig.SessionInfo, out allCrashedJSON) {
		mu.Lock()
		defer mu.Unlock()
		switch out.Outcome {
		case "restored":
			restored++
		case "skipped":
			skipped++
		default:
			failed++
		}
		if c.json {
			c.writeJSON(out)
			return
		}
		title := ""
		if info.Title != "" {
			title = " " + shortQuote(info.Title, 40)
		}
		switch out.Outcome {
		case "restored":
			where := "shut down cleanly"
			if out.restoreJSON.Detached {
				where = fmt.Sprintf("live in host pid %d", out.restoreJSON.PID)
			}
			fmt.Fprintf(c.stdout, "restored %s%s at epoch %d: %s interrupted, %s closed; %s\n", out.ShortID, title,
				out.restoreJSON.Epoch, plural(len(out.restoreJSON.Interrupted), "turn"), plural(len(out.restoreJSON.GatesClosed), "gate"), where)
		case "skipped":
			fmt.Fprintf(c.stdout, "skipped  %s%s: %s\n", out.ShortID, title, out.Reason)
		default:
			fmt.Fprintf(c.stdout, "failed   %s%s: %s (%s)\n", out.ShortID, title, out.Error.Message, out.Error.Kind)
			if out.Error.Hint != "" {
				fmt.Fprintf(c.stdout, "         %s\n", out.Error.Hint)
			}
		}
	}
	for range min(rig.RestoreAllWorkers, len(crashed)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(crashed) || c.ctx.Err() != nil {
					return
				}
				report(crashed[i], c.restoreOneCrashed(crashed[i].ID))
			}
		})
	}
	wg.Wait()
	if !c.json {
		fmt.Fprintf(c.stdout, "restored %d of %d crashed sessions (%d skipped, %d failed)\n", restored, len(crashed), skipped, failed)
	}
	if failed > 0 || c.ctx.Err() != nil {
		return exitRestore
	}
	return exitOK
}

// restoreOneCrashed restores session id for restore --all-crashed.
func (c *call) restoreOneCrashed(id string) allCrashedJSON {
	out := allCrashedJSON{ID: id, ShortID: rig.ShortID(id), Outcome: "restored"}
	var info *rig.RestoreInfo
	var err error
	if c.detach {
		rd, herr := c.startHost(c.ctx, c.st, append(c.restoreFlagArgs(), "--only-crashed", id)...)
		if err = herr; err == nil {
			info = rd.Restored
			if info == nil {
				info = &rig.RestoreInfo{Epoch: rd.Epoch}
			}
			r := newRestoreJSON(id, info)
			r.Detached, r.PID = true, rd.PID
			out.restoreJSON = &r
		}
	} else {
		s, rerr := c.restoreSession(id)
		if err = rerr; err == nil {
			r := newRestoreJSON(id, s.Restored())
			out.restoreJSON = &r
			if serr := shutdown(s, c.sig); serr != nil {
				err = fmt.Errorf("session %s was restored but did not shut down cleanly: %w", rig.ShortID(id), serr)
			}
		}
	}
	skip, holder := explain.RestoreSkipped(err)
	switch {
	case err == nil:
	case skip == explain.SkipNotCrashed:
		out.Outcome, out.Reason, out.restoreJSON = "skipped", "another process restored it first", nil
	case skip == explain.SkipHeld:
		out.Outcome, out.restoreJSON = "skipped", nil
		out.Reason = "another process holds it (it is restoring or running it)"
		if holder.PID != 0 || holder.Host != "" {
			out.Reason = fmt.Sprintf("held by pid %d@%s (another process is restoring or running it)", holder.PID, holder.Host)
		}
	default:
		d := c.describe(err)
		out.Outcome, out.restoreJSON = "failed", nil
		out.Error = &errorJSON{Type: d.typ, Kind: d.kind, Message: d.message, Hint: d.hint}
	}
	return out
}
