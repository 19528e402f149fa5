package tui

import (
	"fmt"
	"strconv"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/host"
)

// A restore in a host (r, B) reports how far it is in bringing the
// workspace back from its checkpoint before the host serves
// (HostRequest.Progress, host.StartSpec.Progress): the events pane shows
// it where it shows the restore, as `looprig restore` draws its bar.

// restoreFeed carries a starting host's progress from the command that
// starts it to the model: the latest report (a slot the command replaces,
// never waits on) until the start is over.
type restoreFeed struct {
	ch   chan host.Progress
	done chan struct{}
}

func newRestoreFeed() *restoreFeed {
	return &restoreFeed{ch: make(chan host.Progress, 1), done: make(chan struct{})}
}

// put replaces the report not taken yet with p; it never blocks (it is
// HostRequest.Progress).
func (f *restoreFeed) put(p host.Progress) {
	for {
		select {
		case f.ch <- p:
			return
		default:
		}
		select {
		case <-f.ch:
		default:
		}
	}
}

// close says the start is over: nothing more comes.
func (f *restoreFeed) close() { close(f.done) }

// restoreProgressMsg: a starting host said how far its restore is.
type restoreProgressMsg struct {
	id   string
	p    host.Progress
	feed *restoreFeed
}

// restoreProgressCmd waits for the next report of feed, until the start
// is over (bounded as the start is) or the TUI quits.
func (h *shared) restoreProgressCmd(id string, feed *restoreFeed) tea.Cmd {
	return func() tea.Msg {
		select {
		case p := <-feed.ch:
			return restoreProgressMsg{id: id, p: p, feed: feed}
		case <-feed.done:
			return nil
		case <-h.ctx.Done():
			return nil
		}
	}
}

// progressed keeps a report of v's restore (p) for the events pane while
// v is being restored (v nil: gone).
func (v *sessView) progressed(p host.Progress) {
	if v != nil && v.busy.takesLease() && p.Materialize != nil {
		mp := *p.Materialize
		v.restoring = &mp
	}
}

// restoringText is how far a restore is in bringing the workspace back,
// as cli's progress bar says it.
func restoringText(p *host.MaterializeProgress) string {
	pct := int64(100)
	if p.Total > 0 {
		pct = p.Done * 100 / p.Total
	}
	return fmt.Sprintf("bringing the workspace back: %d%% (%s of %s)", pct, sizeText(p.Done), sizeText(p.Total))
}

// sizeText is n bytes for people: 512 B, 1.5 KiB, 3.0 MiB, 2.1 GiB.
func sizeText(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(max(n, 0), 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGT"[exp])
}
