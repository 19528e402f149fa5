package tui

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/storage"
)

// The listing: the sessions of the store, listed again on a timer (every
// refreshEvery, slower when listing is slow) and whenever something may
// have changed them. rig.Lister reads the store again only when its change
// stamp moved, so an idle store costs little however many sessions it
// has. Whether a host on this machine serves a held session comes with the
// listing (rig.WithLiveness, host.HolderLiveness: the process table and
// the socket directory, no connection to any host); only the session
// shown is connected to (attached). A holding no host serves yet, or
// whose host is stopped, is looked at again every reprobeEvery, as cheaply;
// an idle tick looks at those holdings only (unserved), not at every
// session.

// listLiveness is how the TUI's listings learn which held sessions a host
// on this machine serves: host.HolderLiveness, without a connection (no
// hosts are looked for without a store key).
func listLiveness(storeKey string) rig.ListOption {
	if storeKey == "" {
		return rig.WithLiveness(nil)
	}
	var dir string
	var dirErr error
	var once sync.Once
	return rig.WithLiveness(func(ctx context.Context, id string, h storage.Holder) rig.Liveness {
		once.Do(func() { dir, dirErr = host.SocketDir(storeKey) })
		if dirErr != nil {
			return rig.LivenessUnknown
		}
		return host.HolderLiveness(ctx, dir, id, h)
	})
}

// listing is what the catalog and the host probes say of a session: its
// latest row, its title and holder as drawn, and whether a host on this
// machine serves it.
type listing struct {
	info     rig.SessionInfo // latest listing row
	listed   bool            // info came from a listing (not made up at hosting)
	rawTitle string
	title    string // sanitized
	holder   string // sanitized "pid N@host"

	probe hostProbe // whether a host on this machine serves it
}

// setInfo takes the session's row of a listing; the title is sanitized
// again only when it changed.
func (l *listing) setInfo(info rig.SessionInfo) {
	l.info = info
	l.listed = true
	if info.Title != l.rawTitle || l.title == "" {
		l.rawTitle = info.Title
		l.title = clean(info.Title)
	}
	l.holder = ""
	if h := info.Holder; h != nil {
		l.holder = clean(holderText(*h))
	}
}

// holderText names a lease holder: "pid N@host".
func holderText(h storage.Holder) string {
	return "pid " + strconv.Itoa(h.PID) + "@" + h.Host
}

// hostProbe is what host.Probe said of the session while a process on
// this machine holds its lease. key names that holding (listing.holding):
// a host that answered is not probed again for it; when none answered, it
// is probed again after reprobeEvery (a host restoring the session holds
// its lease before it serves).
type hostProbe struct {
	key string    // the holding probed (or being probed); "" when not held here
	pid int       // the host's pid; 0 when no host answered (yet)
	at  time.Time // when it was probed
	// asking: a probe is in flight; the journal is not read meanwhile (an
	// answer attaches, and an attach replays the journal itself).
	asking bool
	// noAttach is the holding an attach failed for (or whose host ended
	// while attached): opening the session does not attach to it again,
	// r does.
	noAttach string
	// stopped: the holder runs but is stopped (rig.LivenessStopped): not
	// answering.
	stopped bool
}

// reprobeEvery is how often a holding no host answered for is probed
// again.
const reprobeEvery = 3 * time.Second

// holding names who holds the session as last listed: its epoch and the
// holder's pid; "" when nobody does.
func (l *listing) holding() string {
	if l.info.Holder == nil {
		return ""
	}
	return strconv.FormatUint(l.info.Epoch, 10) + "/" + strconv.Itoa(l.info.Holder.PID)
}

// forgetHost forgets what the probes said (the next listing probes again)
// and keeps opening the session from attaching to its holding as listed.
func (l *listing) forgetHost() {
	l.probe = hostProbe{noAttach: l.holding()}
}

// heldHere says whether a process on this machine (hostname) holds the
// session as last listed, and hosts are looked for (storeKey is set).
func (l *listing) heldHere(hostname, storeKey string) bool {
	h := l.info.Holder
	return h != nil && (l.info.State == rig.StateHeld || l.info.State == rig.StateLive) &&
		h.Host == hostname && storeKey != ""
}

// takeListed takes what a fresh listing says of the host (rig.WithLiveness):
// a session it lists live is served by its holder, another process on
// this machine (self, this process, is listed live for holding, not for
// serving, and is probed). It reports whether the session is unserved: held
// here with no host serving it known, to be probed (probeDue).
func (l *listing) takeListed(hostname, storeKey string, self int, now time.Time) (unserved bool) {
	if !l.heldHere(hostname, storeKey) {
		l.probe.key, l.probe.pid, l.probe.asking, l.probe.stopped = "", 0, false, false
		return false
	}
	key, h := l.holding(), l.info.Holder
	switch {
	case l.info.State == rig.StateLive && h.PID != self:
		l.probe.key, l.probe.pid, l.probe.at, l.probe.asking, l.probe.stopped = key, h.PID, now, false, false
		return false
	case l.info.NotAnswering:
		l.probe.key, l.probe.pid, l.probe.at, l.probe.asking, l.probe.stopped = key, 0, now, false, true
		return true
	case key == l.probe.key && l.probe.pid > 0:
		// A probe answered for this holding (perhaps after the listing
		// was taken): it stands until the holding changes.
		return false
	}
	return true
}

// probeDue says whether to probe now for a host serving the session, and
// for which holding (key): a process on this machine (hostname) holds it,
// hosts are probed (storeKey is set), and that holding was not probed yet,
// or no host answered it for reprobeEvery. A due probe is asking from now
// on; a session not held here forgets its probe.
func (l *listing) probeDue(hostname, storeKey string, now time.Time) (key string, due bool) {
	if !l.heldHere(hostname, storeKey) {
		l.probe.key, l.probe.pid, l.probe.asking, l.probe.stopped = "", 0, false, false
		return "", false
	}
	key = l.holding()
	if key == l.probe.key && (l.probe.pid > 0 || l.probe.asking || now.Sub(l.probe.at) < reprobeEvery) {
		return "", false
	}
	l.probe.key, l.probe.pid, l.probe.at, l.probe.asking = key, 0, now, true
	return key, true
}

// refreshList lists the sessions now, unless a listing is in flight.
func (m *model) refreshList() tea.Cmd {
	if m.listInFlight {
		return nil
	}
	m.listInFlight = true
	if m.h.lister != nil && m.list.listed {
		m.h.lister.Show(m.list.shownIDs(m.listSpace()))
	}
	return m.h.listCmd()
}

func (m *model) onList(msg listMsg) tea.Cmd {
	m.listInFlight = false
	next := listTick(max(refreshEvery, 3*msg.took))
	if m.quitting != "" {
		return nil
	}
	if msg.err != nil {
		m.list.err = msg.err
		m.h.log.Warn("list sessions", "err", msg.err)
		return next
	}
	m.list.err = nil
	if msg.same && m.list.listed {
		// Nothing changed in the store; a holding no host serves yet is
		// still probed again when it is due. Only those are looked at.
		cmds := []tea.Cmd{next}
		for id := range m.unserved {
			if c := m.probeHolder(m.sessions[id]); c != nil {
				cmds = append(cmds, c)
			}
		}
		return tea.Batch(cmds...)
	}
	var cmds []tea.Cmd
	seen := make(map[string]bool, len(msg.infos))
	for _, info := range msg.infos {
		seen[info.ID] = true
		v := m.sessions[info.ID]
		if v == nil {
			v = m.newSessView(info.ID)
			m.sessions[info.ID] = v
		}
		v.listing.setInfo(info)
		if v.listing.takeListed(m.h.hostname, m.h.opts.StoreKey, m.h.pid, m.now()) {
			m.unserved[info.ID] = true
		} else {
			delete(m.unserved, info.ID)
		}
		if l := v.lost; l != nil && info.Epoch > l.oldEpoch {
			l.newEpoch = max(l.newEpoch, info.Epoch)
			if v.listing.holder != "" {
				l.holder = v.listing.holder
			}
		}
		if c := m.probeHolder(v); c != nil {
			cmds = append(cmds, c)
		}
	}
	for id, v := range m.sessions {
		if !seen[id] && !v.attached() && v.busy == notBusy && v.lost == nil {
			delete(m.sessions, id)
			delete(m.unserved, id)
		}
	}
	prev := m.list.selected()
	m.list.resort(m.sessions)
	m.list.keepVisible(m.listSpace())
	cmds = append(cmds, next)
	if sel := m.list.selected(); !m.list.listed || prev != sel || (sel != nil && sel.journal.state == journalRead && sel.listing.mayGrow()) {
		// Shown for the first time, or someone took the lease of the
		// session shown: read (on) its journal.
		m.list.listed = true
		cmds = append(cmds, m.ensureLoaded(sel))
	}
	return tea.Batch(cmds...)
}

// probeHolder probes whether a host serves v, when a process on this
// machine holds it, no host is known to serve it, and that holding was
// not probed yet (or not for reprobeEvery). A session no longer held here
// leaves unserved.
func (m *model) probeHolder(v *sessView) tea.Cmd {
	if v == nil {
		return nil
	}
	key, due := v.listing.probeDue(m.h.hostname, m.h.opts.StoreKey, m.now())
	if v.listing.probe.key == "" || v.listing.probe.pid > 0 {
		delete(m.unserved, v.id)
	}
	if !due {
		return nil
	}
	return m.h.probeCmd(v.id, key, *v.listing.info.Holder)
}

// onProbed: a host answered for a session held on this machine, or none
// did. A host counts when it is the lease holder, as for looprig ls; a
// live session shown is attached to.
func (m *model) onProbed(msg probedMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.key != v.listing.probe.key {
		return nil
	}
	v.listing.probe.pid, v.listing.probe.asking, v.listing.probe.stopped = msg.pid, false, msg.stopped
	switch {
	case msg.err != nil:
		v.listing.probe.pid = 0
		m.unserved[v.id] = true
		if !errors.Is(msg.err, host.ErrNotHosted) {
			m.h.log.Warn("probe host", "session", v.id, "err", msg.err)
		}
	case v.listing.info.Holder == nil || v.listing.info.Holder.PID != msg.pid:
		// A host answers, but it does not hold the lease (as ls, the
		// holder decides): not attachable.
		m.h.log.Warn("a host answers for a session it does not hold", "session", v.id, "pid", msg.pid)
		v.listing.probe.pid = 0
		m.unserved[v.id] = true
	}
	if v.listing.probe.pid > 0 {
		delete(m.unserved, v.id)
	}
	if v == m.list.selected() {
		// Attach to the host that answered, or read the journal that
		// waited for the answer.
		return m.ensureLoaded(v)
	}
	return nil
}
