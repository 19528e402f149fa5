// Package tui is looprig's terminal UI: a Bubble Tea presenter over the
// session runtime. It lists the sessions of a store (refreshed on its own
// from the catalog and lease probes), follows the journals of sessions
// read-only, and shows restore failures, configuration drift and lease
// loss.
//
// The TUI hosts no session itself: every live session runs in its own
// background host process (`looprig host ID`, package host), which
// Options.StartHost starts for n, r and B. The TUI is a client of those
// hosts: it attaches to a session (history from the journal, then the
// host's event stream after the last sequence read), sends it commands
// (submit, input to the running turn's terminal, interrupt, gate answers,
// shutdown; the turn's terminal size follows the events pane) and detaches
// when it quits, on q, ctrl+c, SIGHUP or SIGTERM alike: the sessions keep
// running. A session held by a host on this machine (host.Probe answers)
// lists as live with the host's pid, and opening it attaches to it.
//
// Rules it keeps (docs/ARCHITECTURE.md): Update never blocks, and its only
// I/O is writing warnings to the log file (Options.LogPath) as it folds
// failures; every runtime, store and socket call runs in a tea.Cmd with a
// timeout (cmds.go); the event stream of each attached session is read by
// a re-arming command that drains everything queued into one message; the
// same reducer (fold.go) folds journal records and live events; View draws
// exactly the window and only the visible rows; untrusted text is
// sanitized before it is drawn; state is shown by glyph and word as well
// as colour.
//
// The root model (model.go, update.go, view.go, layout.go, selection.go)
// is thin: it routes messages and keys and lays the components out. Each
// component has a file with its keys next to its drawing, and its methods
// receive what they draw (a common of styles, keys, time and spinner; the
// session drawn; their size) and return what happened (a tea.Cmd, a flag,
// an inputAction, a dialog's action), never the root: the sessions list
// (list.go), the detail pane (detail.go), the events pane (events.go),
// the errors/lease strip (strip.go), the status bar (status.go), the help
// screen (help.go), the input line and its echo polls (input.go,
// turninput.go), the changes view (changes.go), the dialogs (dialogs.go,
// newsession.go; an R run, restoreall.go), what the sessions ask of the
// user (attention.go, notify.go, seen.go) and the keys given to a
// full-screen program (screenfocus.go). Each owns its state; the root
// passes them the sessions and the shared command context they need. What the model knows of a session is sessView
// (session.go), in parts: its listing (listing.go), the attachment to its
// host (attachment.go), the reading of its journal (journal.go) and the
// transcript folded from its events (transcript.go; the reducer, fold.go;
// its output, output.go and screen.go). The root's message handlers fold
// the results of the commands (cmds.go) into the sessions: the listing
// (listing.go), journal reading (journal.go), attached sessions (live.go),
// input to a running turn and its terminal size (turninput.go,
// turnsize.go), the keys acting on a session (actions.go) and quitting
// (quit.go); clients.go holds what the commands share: the store, the
// host clients and the context that ends them.
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

	"looprig/config"
	"looprig/host"
	"looprig/rig"
	"looprig/rig/storage"
	"looprig/themes"
	"looprig/tui/draw"
)

// Options configure the TUI.
type Options struct {
	Store          storage.Store          // fsstore or natsstore in production
	StoreDir       string                 // shown in the status bar
	Workspaces     string                 // where session workspaces live (delete, the detail pane)
	Profiles       map[string]rig.Profile // built-in default and demo plus the user's
	DefaultProfile string
	Theme          string // initial theme name ("" = persisted choice or the default)
	ConfigDir      string // user themes (themes/*.toml) and the persisted theme choice
	// Dir is the directory the TUI was started in: n offers it as a new
	// session's directory, as `looprig new` uses the shell's.
	Dir     string
	LogPath string // logs go to this file, never to the terminal
	Now     func() time.Time
	// FPS is how many frames a second it may draw (tui_fps); 0 is FPS.
	FPS int

	// SearchDir is where the search index lives (s); "" is beside the
	// store (package search).
	SearchDir string

	// StoreKey names the store's socket directory: host.SocketDir(StoreKey),
	// host.Connect(ctx, StoreKey, id). "" probes no host.
	StoreKey string
	// StartHost starts a detached host for a session and waits until it
	// serves (host.Start in production). Its failure is a *host.RemoteError
	// whose explain.Explain classification is the host's (a RestoreError,
	// a RestoreRejectedError with "changes", a ProfileGoneError, a
	// LeaseHeldError ...), or a *host.HostExitedError. Nil: n, r and B
	// fail saying so.
	StartHost func(ctx context.Context, req HostRequest) (host.Ready, error)
	// Version is looprig's version, told to hosts in the hello (a host of
	// another protocol names it in its refusal). "" says "devel".
	Version string

	// KeptListing is the file of the listing `looprig ls` keeps
	// (rig.Lister.Keep): the first frame starts from it while the store
	// stands still, the next listing is in full. "" lists in full first.
	KeptListing string

	// SeenFile keeps what the user has looked at (the marks' "since you
	// last looked") across restarts; "" is tui/seen.json in
	// Store.LocalDir() (seenPath), and nowhere for a store with no local
	// directory.
	SeenFile string
	// Notify is how a session in the background that needs the user is
	// announced: "bell" (the default), "osc9", "osc777" or "none"
	// (config.NotifyModes). NotifyAfter is how long a turn must have run
	// for its end to be announced (config.DefaultNotifyAfter when 0).
	Notify      string
	NotifyAfter time.Duration
	// NotifyTo is where the announcements are written: the terminal the
	// TUI draws on (Run: os.Stdout, as Bubble Tea's output). Nil announces
	// nothing.
	NotifyTo io.Writer
	// Warning is shown in the status bar at start (e.g. that logind will
	// kill the hosts at logout), until the first flash replaces it.
	Warning string
	// InTmux says looprig runs inside tmux ($TMUX set): desktop
	// notifications are wrapped for tmux's passthrough.
	InTmux bool
}

// HostRequest asks for a host process for a session.
type HostRequest struct {
	// Session is the full id of the session to restore; "" to create a new
	// one.
	Session string
	// Profile is, for a create, the profile's name ("" = the default); a
	// restore ignores it: the host restores with the profile the session
	// recorded (rig.ProfileFor).
	Profile string
	// Title and Seed are for a create only (Seed: a directory copied into
	// the workspace, "" for none).
	Title, Seed string
	// Dir, for a create, is the directory the session lives in (an
	// exclusive root), and Scratch gives it a private directory in the
	// store instead; neither is set when the profile pins its placement.
	Dir     string
	Scratch bool
	// Fork, for a create, is the full id of a session to fork (looprig
	// fork) at turn ForkTurn (its number; "" for the last turn that
	// ended): the new session begins with that session's files, and
	// conversation, as after that turn.
	Fork, ForkTurn string
	// Worktree, for a create, gives the session a git worktree of its
	// own on a new branch, beside the repository Dir is in (looprig new
	// --worktree).
	Worktree bool
	// AcceptDrift, for a restore, accepts any configuration drift (the
	// TUI's confirm; journaled as adopted by "tui confirm").
	AcceptDrift bool
	// Workspace, for a restore, resolves a workspace directory that
	// diverged from the session's checkpoints (the TUI's diverged
	// dialog): rig.WorkspaceKeep or rig.WorkspaceUseCheckpoint.
	Workspace rig.WorkspaceChoice
	// OnlyIfCrashed, for a restore, restores the session only if it is
	// crashed (rig.OnlyIfCrashed): R restoring every crashed session never
	// restores one that another client restored and stopped meanwhile.
	OnlyIfCrashed bool
	// Progress, when not nil, is told what the host reports of its work
	// before it serves (a restore bringing the workspace back from its
	// checkpoint: host.StartSpec.Progress); it must not block.
	Progress func(host.Progress)
}

// Timeouts of the commands.
const (
	listTimeout      = 5 * time.Second
	createTimeout    = 30 * time.Second
	restoreTimeout   = 2 * time.Minute // as the CLI waits for a host it starts: a restore may bring a large workspace back
	opTimeout        = 10 * time.Second
	attachTimeout    = 5 * time.Second
	probeTimeout     = time.Second
	interruptTimeout = 20 * time.Second
	shutdownTimeout  = 15 * time.Second // of the host's silence
	// hostSilence bounds a submit by how long its host says nothing
	// (neither its reply nor how far the checkpoint it waits for is):
	// past the host's own bound of a request (30 s).
	hostSilence    = 45 * time.Second
	detachBound    = time.Second
	historyTimeout = 10 * time.Second
	refreshEvery   = time.Second
	tailEvery      = 500 * time.Millisecond
	historyChunk   = 2048
)

// FPS is how many times a second the TUI may draw a frame unless the
// configuration says otherwise (tui_fps, Options.FPS); its default is the
// configuration's. A frame is drawn as soon as it is pending (tui/draw):
// FPS bounds the rate only while frames keep coming, and a TUI whose view
// stands still draws nothing.
const FPS = config.DefaultTUIFPS

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

// model is the root: the sessions, the components and what routes
// between them.
type model struct {
	h    *shared
	keys keyMap
	now  func() time.Time

	width, height int

	renderer *lipgloss.Renderer
	themes   *themes.Set
	st       *styles

	// the sessions and their listing
	sessions map[string]*sessView // every session known, by id
	// unserved: the sessions held on this machine that no host is known
	// to serve (probed again every reprobeEvery): an idle tick looks at
	// these only.
	unserved     map[string]bool
	listInFlight bool // a listing is in flight
	useClock     int  // LRU clock of the journals shown (evict)
	creating     int  // creates in flight

	// the components
	focus    pane
	list     sessionList
	detail   detailPane
	events   eventsPane
	dialog   dialog
	help     *helpView
	changes  *changesView // what a turn changed (changes.go)
	search   *searchView  // every line of every session (search.go)
	jump     *searchJump  // the hit chosen there, to scroll its session's events to
	found    *searchFound // the search of the hit opened, for n/N (search_nav.go)
	input    *inputBar
	inputGen int // the input lines opened in turn-input mode (their echo polls)
	// screenFocus: the full-screen program that has the keys (screenfocus.go)
	screenFocus *screenFocus
	status      statusBar
	spin        spinner
	strip       errorStrip

	quitting string // shown while the TUI detaches at quit

	// what the sessions ask of the user: what the user looked at and the
	// announcements (attention.go, seen.go, notify.go)
	attn attention
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
	hostname, _ := os.Hostname()
	h := &shared{
		opts: opts, store: opts.Store, ctx: ctx, cancel: cancel,
		log: log, readTimeout: historyTimeout, hostname: hostname,
		chunk: historyChunk, tail: tailReplay,
		lister:  rig.NewLister(opts.Store, listLiveness(opts.StoreKey)),
		pid:     os.Getpid(),
		clients: map[*host.Client]string{},
	}
	if opts.KeptListing != "" {
		h.lister.Keep(opts.KeptListing)
	}
	m := &model{
		h: h, keys: defaultKeys(), now: opts.Now,
		renderer: r,
		sessions: map[string]*sessView{},
		unserved: map[string]bool{},
		width:    80, height: 24,
	}
	user, errs := themes.LoadDir(themes.Dir(opts.ConfigDir))
	if opts.ConfigDir == "" {
		user, errs = nil, nil
	}
	m.themes = themes.NewSet(user...)
	name := opts.Theme
	if name == "" {
		c, err := themes.LoadChoice(opts.ConfigDir)
		if err != nil {
			errs = append(errs, err)
		}
		name = c
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
	m.detail.workspaces = opts.Workspaces
	m.status.store = opts.StoreDir
	seenFile, olderSeen := opts.SeenFile, ""
	if seenFile == "" && opts.Store != nil {
		seenFile, olderSeen = seenPath(opts.Store.LocalDir())
	}
	m.attn.seen, err = loadSeen(seenFile, olderSeen)
	if err != nil {
		h.log.Warn("seen state not read", "err", err)
	}
	m.list.seen = m.attn.seen
	switch {
	case themeError != "":
		m.status.msg, m.status.cls = clean(themeError), clsError
	case opts.Warning != "":
		m.status.msg, m.status.cls = "warning: "+clean(opts.Warning), clsError
		h.log.Warn(opts.Warning)
	}
	return Model{m}
}

// newSessView is newSessView for this TUI: its output is rendered with
// the TUI's colour profile, a full-screen program's screen at the turn
// size.
func (m *model) newSessView(id string) *sessView {
	v := newSessView(id)
	v.transcript.prof = outProfile(m.renderer)
	cols, rows := m.turnSize()
	v.transcript.screenSize = [2]int{cols, rows}
	return v
}

// Init starts the listing and its refresh timer.
func (m Model) Init() tea.Cmd {
	return m.refreshList()
}

// finish is what follows the program, whatever ended it: every reader
// stops, and the TUI detaches from every session (closes its clients);
// the sessions keep running in their hosts.
func (m Model) finish() {
	m.h.cancel()
	if n := m.h.closeAll(detachBound); n > 0 {
		m.h.log.Info("detached", "sessions", n)
	}
}

// Run runs the TUI on the terminal (alternate screen) until the user quits
// or ctx ends (SIGHUP, SIGTERM). Whatever ends it, it detaches from the
// sessions it is attached to before it returns: they keep running in their
// hosts.
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
	fps := opts.FPS
	if fps <= 0 {
		fps = FPS
	}
	d := draw.NewDrawer(os.Stdout, fps)
	if opts.NotifyTo == nil {
		opts.NotifyTo = d // between two frames, never inside one
	}
	opts.InTmux = opts.InTmux || os.Getenv("TMUX") != ""
	m := newModelLog(opts, defaultRenderer(), log)
	m.h.log.Info("tui start", "store", opts.StoreDir, "pid", os.Getpid(), "fps", fps)
	_, err := draw.Run(ctx, m, d, draw.Terminal{Title: "looprig"})
	m.finish()
	if err != nil && ctx.Err() != nil {
		err = nil // the caller ended it
	}
	m.h.log.Info("tui stop", "err", err)
	return err
}
