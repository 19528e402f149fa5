// Package tui is looprig's terminal UI: a Bubble Tea presenter over the
// session runtime. It lists the sessions of a store (refreshed on its own
// from the catalog and lease probes), hosts the sessions it creates or
// restores, follows the journals of sessions held elsewhere read-only, and
// shows restore failures, configuration drift and lease loss.
//
// Rules it keeps (docs/ARCHITECTURE.md): Update never blocks, and its only
// I/O is writing warnings to the log file (Options.LogPath) as it folds
// failures; every runtime and store call runs in a tea.Cmd with a timeout
// (cmds.go); one hub subscription
// per hosted session is read by a re-arming command that drains
// everything queued into one message; the same reducer (fold.go) folds
// journal records and live events; View draws exactly the window and only
// the visible rows; untrusted text is sanitized before it is drawn; state
// is shown by glyph and word as well as colour.
//
// The root model (model.go, update.go, view.go, layout.go) is small and
// delegates. Each component has a file with its keys next to its drawing:
// the sessions list (list.go), the detail pane (detail.go), the events
// pane (events.go), the errors/lease strip (strip.go), the status bar
// (status.go), the help screen (help.go), the input line (input.go), the
// dialogs (dialogs.go, newsession.go). What the model knows of a session
// is sessView (session.go), folded from its events (fold.go); the listing
// (listing.go), journal reading (journal.go), hosted sessions (live.go),
// the keys acting on a session (actions.go) and quitting (quit.go) fold the
// messages of the commands (cmds.go); host.go holds the sessions this TUI
// hosts.
package tui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"looprig/rig"
	"looprig/rig/storage"
	"looprig/themes"
)

// Options configure the TUI.
type Options struct {
	Store          storage.Store          // fsstore or natsstore in production
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

// pane is a pane that can have the focus.
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
	themes   *themes.Set
	st       *styles

	// the sessions and their listing
	sessions map[string]*sessView // every session known, by id
	listing  bool                 // a listing is in flight
	listed   bool                 // a listing arrived
	listErr  error                // the last listing failed
	useClock int                  // LRU clock of the journals shown (evict)
	creating int                  // creates in flight

	// the components
	focus     pane
	list      sessionList
	detail    detailPane
	dialog    dialog
	help      *helpView
	input     *inputBar
	status    statusBar
	spin      spinner
	globalErr *opFailure // a failure of no session (a create), shown in the strip

	quitting string // shown while sessions shut down at quit
	quitErr  error
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
		log: log, readTimeout: historyTimeout,
		rigs: map[string]*rig.Rig{}, live: map[string]*rig.Session{},
	}
	m := &model{
		h: h, keys: defaultKeys(), now: opts.Now,
		renderer: r,
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
	var themeError string
	th, err := m.themes.Lookup(name)
	if err != nil {
		themeError = err.Error()
		th, _ = m.themes.Lookup(themes.Default)
	}
	for _, e := range errs {
		themeError = e.Error()
		h.log.Warn("theme not loaded", "err", e)
	}
	m.st = newStyles(r, th)
	m.list.filterInput = newInput("filter: ", 200)
	if themeError != "" {
		m.status.msg, m.status.cls = clean(themeError), clsError
	}
	return Model{m}
}

// Init starts the listing and its refresh timer.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.refreshList(), tea.SetWindowTitle("looprig"))
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
