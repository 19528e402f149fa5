// Package tui is looprig's terminal UI: a Bubble Tea presenter over the
// session runtime. It lists the sessions of a store (refreshed on its own
// from the catalog and lease probes), hosts the sessions it creates or
// restores, follows the journals of sessions held elsewhere read-only, and
// shows restore failures, configuration drift and lease loss.
//
// Rules it keeps (DESIGN.md section 9): Update never blocks and never does
// I/O; every runtime and store call runs in a tea.Cmd with a timeout; one
// hub subscription per hosted session is read by a re-arming command that
// drains everything queued into one message; the same reducer folds
// journal records and live events; View draws exactly the window and only
// the visible rows; untrusted text is sanitized before it is drawn; state
// is shown by glyph and word as well as colour.
package tui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"looprig/rig"
	"looprig/rig/storage"
	"looprig/themes"
)

// Options configure the TUI.
type Options struct {
	Store          storage.Store          // fsstore in production (implements storage.Breaker, ProbeMany)
	StoreDir       string                 // shown in the status bar
	Workspaces     string                 // for rig.WithWorkspaces
	Profiles       map[string]rig.Profile // built-in default and demo plus the user's
	DefaultProfile string
	Theme          string // initial theme name ("" = persisted choice or the default)
	ConfigDir      string // user themes (themes/*.toml) and the persisted theme choice
	LogPath        string // logs go to this file, never to the terminal
	Now            func() time.Time

	// RigOptions are passed to every rig.Define after the TUI's own (engine
	// tuning, a decider); optional.
	RigOptions []rig.Option
}

// Timeouts of the commands.
const (
	listTimeout      = 5 * time.Second
	createTimeout    = 30 * time.Second
	restoreTimeout   = 60 * time.Second
	opTimeout        = 10 * time.Second
	interruptTimeout = 20 * time.Second
	shutdownTimeout  = 15 * time.Second
	quitBound        = 15 * time.Second
	forceQuitBound   = 3 * time.Second
	historyTimeout   = 10 * time.Second
	refreshEvery     = time.Second
	tailEvery        = 500 * time.Millisecond
	historyChunk     = 2048
)

// host is what commands share with Update: the store, the rig cache, the
// hosted sessions (so Run can shut them down whatever happens) and the
// context that ends every reader at quit. Its fields are safe for
// concurrent use.
type host struct {
	opts   Options
	store  storage.Store
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	mu   sync.Mutex
	rigs map[string]*rig.Rig
	live map[string]*rig.Session
}

// rigFor returns the cached rig of a profile; accept builds a fresh one
// that accepts any drift (the TUI's confirm).
func (h *host) rigFor(name string, accept bool) (*rig.Rig, error) {
	p, ok := h.opts.Profiles[name]
	if !ok {
		p, ok = h.opts.Profiles[h.opts.DefaultProfile]
		if !ok {
			p = rig.DefaultProfile()
		}
	}
	key := p.Name
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.rigs[key]; r != nil && !accept {
		return r, nil
	}
	opts := []rig.Option{rig.WithStore(h.store), rig.WithProfile(p), rig.WithLogger(h.log)}
	if h.opts.Workspaces != "" {
		opts = append(opts, rig.WithWorkspaces(h.opts.Workspaces))
	}
	opts = append(opts, h.opts.RigOptions...)
	if accept {
		opts = append(opts, rig.WithDecider(rig.AcceptAll("tui confirm")))
	}
	r, err := rig.Define(opts...)
	if err != nil {
		return nil, err
	}
	if !accept {
		h.rigs[key] = r
	}
	return r, nil
}

func (h *host) hold(id string, s *rig.Session) {
	h.mu.Lock()
	h.live[id] = s
	h.mu.Unlock()
}

func (h *host) drop(id string, s *rig.Session) {
	h.mu.Lock()
	if h.live[id] == s {
		delete(h.live, id)
	}
	h.mu.Unlock()
}

func (h *host) hosted() []*rig.Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*rig.Session, 0, len(h.live))
	for _, s := range h.live {
		out = append(out, s)
	}
	return out
}

// shutdownAll shuts every hosted session down in parallel, waiting at most
// bound.
func (h *host) shutdownAll(bound time.Duration) error {
	ss := h.hosted()
	if len(ss) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	errs := make(chan error, len(ss))
	for _, s := range ss {
		go func() {
			err := s.Shutdown(ctx)
			if err != nil {
				h.log.Warn("shutdown at quit", "session", s.SessionID(), "err", err)
			}
			h.drop(s.SessionID().String(), s)
			errs <- err
		}()
	}
	var first error
	for range ss {
		select {
		case err := <-errs:
			if err != nil && first == nil {
				first = err
			}
		case <-ctx.Done():
			return fmt.Errorf("shutting sessions down took longer than %s", bound)
		}
	}
	return first
}

type pane int

const (
	paneList pane = iota
	paneEvents
	paneDetail
	numPanes
)

// Model is the root model.
type Model struct{ *model }

type model struct {
	h    *host
	keys keyMap
	now  func() time.Time

	width, height int

	renderer *lipgloss.Renderer
	noColor  bool
	themes   *themes.Set
	st       *styles

	sessions map[string]*sessView
	rows     []*sessView // every session, newest first
	vis      []*sessView // rows passing the filter
	cursor   int
	top      int // first visible row

	listing     bool
	listed      bool
	listErr     error
	lastListDur time.Duration
	useClock    int
	settleGen   int

	focus        pane
	filter       string
	filterInput  textinput.Model
	filterActive bool

	dialog   dialog
	help     *helpView
	input    *inputBar
	flashMsg string
	flashCls uint8
	flashGen int

	spinGen  int
	spinning bool
	frameNo  int

	globalErr *opFailure
	creating  int
	detailTop int

	quitting   string // shown while sessions shut down at quit
	quitErr    error
	themeError string
}

// New returns the root model.
func New(opts Options) Model {
	return newModelLog(opts, defaultRenderer(), nil)
}

// defaultRenderer detects the terminal's colour profile on stdout; NO_COLOR
// turns every style off.
func defaultRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(os.Stdout)
	if themes.NoColor() {
		r.SetColorProfile(termenv.Ascii)
	}
	return r
}

func newModel(opts Options, r *lipgloss.Renderer) Model { return newModelLog(opts, r, nil) }

func newModelLog(opts Options, r *lipgloss.Renderer, log *slog.Logger) Model {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Profiles == nil {
		opts.Profiles = map[string]rig.Profile{}
	}
	if len(opts.Profiles) == 0 {
		d, m := rig.DefaultProfile(), rig.DemoProfile()
		opts.Profiles[d.Name], opts.Profiles[m.Name] = d, m
	}
	if opts.DefaultProfile == "" {
		opts.DefaultProfile = rig.DefaultProfile().Name
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &host{
		opts: opts, store: opts.Store, ctx: ctx, cancel: cancel,
		log:  log,
		rigs: map[string]*rig.Rig{}, live: map[string]*rig.Session{},
	}
	m := &model{
		h: h, keys: defaultKeys(), now: opts.Now,
		renderer: r, noColor: r.ColorProfile() == termenv.Ascii,
		sessions: map[string]*sessView{},
		width:    80, height: 24,
	}
	user, errs := themes.LoadDir(themes.Dir(opts.ConfigDir))
	if opts.ConfigDir == "" {
		user, errs = nil, nil
	}
	m.themes = themes.NewSet(user...)
	name := opts.Theme
	if name == "" {
		if c, err := themes.LoadChoice(opts.ConfigDir); err == nil && c != "" {
			name = c
		}
	}
	if name == "" {
		name = themes.Default
	}
	th, err := m.themes.Lookup(name)
	if err != nil {
		m.themeError = err.Error()
		th, _ = m.themes.Lookup(themes.Default)
	}
	for _, e := range errs {
		m.themeError = e.Error()
		h.log.Warn("theme not loaded", "err", e)
	}
	m.st = newStyles(r, th)
	m.filterInput = newInput("filter: ", 200)
	if m.themeError != "" {
		m.flashMsg, m.flashCls = clean(m.themeError), clsError
	}
	return Model{m}
}

func newInput(prompt string, limit int) textinput.Model {
	ti := textinput.New()
	ti.Prompt = prompt
	ti.CharLimit = limit
	return ti
}

// Init starts the listing and its refresh timer.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.listCmd(), tea.SetWindowTitle("looprig"))
}

// Run runs the TUI on the terminal (alternate screen) until the user quits
// or ctx ends; every session it hosts is shut down before it returns.
func Run(ctx context.Context, opts Options) error {
	if opts.Store == nil {
		return fmt.Errorf("tui: no store")
	}
	if opts.Theme != "" {
		user, _ := themes.LoadDir(themes.Dir(opts.ConfigDir))
		if _, err := themes.NewSet(user...).Lookup(opts.Theme); err != nil {
			return err
		}
	}
	var log *slog.Logger
	if opts.LogPath != "" {
		f, err := os.OpenFile(opts.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("tui: open log: %w", err)
		}
		defer f.Close()
		log = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	m := newModelLog(opts, defaultRenderer(), log)
	m.h.log.Info("tui start", "store", opts.StoreDir, "pid", os.Getpid())
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx))
	_, err := p.Run()
	m.h.cancel()
	// Whatever ended the program, sessions hosted here end cleanly.
	if serr := m.h.shutdownAll(forceQuitBound); serr != nil {
		m.h.log.Warn("shutdown at exit", "err", serr)
	}
	if err != nil && ctx.Err() != nil {
		err = nil // the caller ended it
	}
	if err == nil {
		err = m.quitErr
	}
	m.h.log.Info("tui stop", "err", err)
	return err
}

// ---- rows, selection, filter ------------------------------------------------------

func (m *model) selected() *sessView {
	if m.cursor >= 0 && m.cursor < len(m.vis) {
		return m.vis[m.cursor]
	}
	return nil
}

// resort orders rows (newest first, by creation) and reapplies the filter,
// keeping the selection on the same session.
func (m *model) resort() {
	var keep string
	if s := m.selected(); s != nil {
		keep = s.id
	}
	m.rows = m.rows[:0]
	for _, v := range m.sessions {
		m.rows = append(m.rows, v)
	}
	sort.Slice(m.rows, func(i, j int) bool {
		a, b := m.rows[i], m.rows[j]
		if !a.info.Created.Equal(b.info.Created) {
			return a.info.Created.After(b.info.Created)
		}
		return a.id < b.id
	})
	m.refilter(keep)
}

func (m *model) refilter(keep string) {
	m.vis = m.vis[:0]
	f := lower(m.filter)
	for _, v := range m.rows {
		if f == "" || m.matches(v, f) {
			m.vis = append(m.vis, v)
		}
	}
	m.cursor = 0
	if keep != "" {
		for i, v := range m.vis {
			if v.id == keep {
				m.cursor = i
				break
			}
		}
	}
	m.clampCursor()
}

func (m *model) matches(v *sessView, f string) bool {
	return contains(lower(v.title), f) || contains(v.id, f) || contains(string(v.state()), f) ||
		contains(lower(v.info.Profile), f) || contains(lower(v.holder), f)
}

func (m *model) clampCursor() {
	if m.cursor >= len(m.vis) {
		m.cursor = len(m.vis) - 1
	}
	if m.cursor < 0 {
		m.cursor = 0
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
