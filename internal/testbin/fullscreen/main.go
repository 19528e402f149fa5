// Command fullscreen is a scripted full-screen program for the tests
// that pass a screen through (run and attach in tmux): it enters the
// alternate screen, draws a known frame, reads keys raw and shows them in
// the frame, rings the bell once drawn, shows "submitted: LINE" for each
// Enter ("\r"), shows "ctrl-c" for 0x03, draws the whole frame again on
// SIGWINCH, hides the cursor on "H", rings the bell again on Ctrl-G
// (mid-screen, then goes on drawing: "bells: N"), and leaves the alternate
// screen on "q", printing the lines submitted on the main screen. With
// -nobell it rings no bell once drawn (only on Ctrl-G). With -hostile it also writes what must
// never reach a terminal through looprig: OSC 52 (clipboard), a title,
// an OSC 8 hyperlink, a DCS string.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

type prog struct {
	typed, last string
	submitted   []string
	ctrlC       int
	bells       int
	hostile     bool
	cols, rows  int
}

func main() {
	hostile := flag.Bool("hostile", false, "also write OSC 52, a title, a hyperlink and DCS")
	nobell := flag.Bool("nobell", false, "ring no bell once drawn (only on Ctrl-G)")
	flag.Parse()
	fd := int(os.Stdin.Fd())
	orig, err := unix.IoctlGetTermios(fd, termiosGet)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fullscreen: stdin is not a terminal")
		os.Exit(2)
	}
	raw := *orig
	raw.Iflag &^= unix.ICRNL | unix.IXON
	raw.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG | unix.IEXTEN
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	unix.IoctlSetTermios(fd, termiosSet, &raw)
	p := &prog{hostile: *hostile}
	p.size()
	os.Stdout.WriteString("\x1b[?1049h")
	p.frame()
	if !*nobell {
		os.Stdout.WriteString("\a") // the bell, mid-screen
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	keys := make(chan []byte)
	go func() {
		for {
			b := make([]byte, 256)
			n, err := os.Stdin.Read(b)
			if err != nil || n == 0 {
				close(keys)
				return
			}
			keys <- b[:n]
		}
	}()
	for done := false; !done; {
		select {
		case <-winch:
			p.size()
			p.frame()
		case b, ok := <-keys:
			if !ok {
				done = true
				break
			}
			done = p.keys(b)
		}
	}
	os.Stdout.WriteString("\x1b[?1049l")
	unix.IoctlSetTermios(fd, termiosSet, orig)
	fmt.Printf("fullscreen: left; submitted %q\n", p.submitted)
}

func (p *prog) size() {
	p.cols, p.rows = 80, 24
	if ws, err := unix.IoctlGetWinsize(1, unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		p.cols, p.rows = int(ws.Col), int(ws.Row)
	}
}

// keys takes one read; true on "q".
func (p *prog) keys(b []byte) bool {
	for _, c := range b {
		switch {
		case c == 'q' && p.typed == "":
			return true
		case c == '\r':
			p.last = p.typed
			p.submitted = append(p.submitted, p.typed)
			p.typed = ""
		case c == '\n':
			p.last = "(a newline, not Enter)"
		case c == 3:
			p.ctrlC++
		case c == 7: // Ctrl-G: the bell, mid-screen, and the screen goes on
			p.bells++
			os.Stdout.WriteString("\a")
		case c == 'H': // the program hides the cursor
			os.Stdout.WriteString("\x1b[?25l")
		case c == 0x7f:
			if p.typed != "" {
				p.typed = p.typed[:len(p.typed)-1]
			}
		case c >= ' ' && c < 0x7f:
			p.typed += string(c)
		}
	}
	p.lines()
	return false
}

// frame draws the whole screen.
func (p *prog) frame() {
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	b.WriteString("\x1b[1;1H\x1b[1;37;44m FULLSCREEN TEST \x1b[0m")
	fmt.Fprintf(&b, "\x1b[2;1Hsize %dx%d", p.cols, p.rows)
	b.WriteString("\x1b[4;3H\x1b[32m+----------+\x1b[0m")
	b.WriteString("\x1b[5;3H\x1b[32m|\x1b[0m  box   \x1b[32m|\x1b[0m")
	b.WriteString("\x1b[6;3H\x1b[32m+----------+\x1b[0m")
	fmt.Fprintf(&b, "\x1b[%d;1Hbottom row: q leaves", p.rows)
	if p.hostile {
		b.WriteString("\x1b]52;c;SE9TVElMRS1DTElQ\a")                      // the clipboard
		b.WriteString("\x1b]0;HOSTILE-TITLE\a\x1b]2;HOSTILE-TITLE2\x1b\\") // titles
		b.WriteString("\x1b[8;1H\x1b]8;;https://evil.example/HOSTILE-URL\x1b\\link text\x1b]8;;\x1b\\")
		b.WriteString("\x1bP1$qHOSTILE-DCS\x1b\\")
		b.WriteString("\x1b[?1000h\x1b[?1004h") // mouse reports, focus events
	}
	os.Stdout.WriteString(b.String())
	p.lines()
}

// lines draws the rows that change with the keys, the cursor after what
// is typed.
func (p *prog) lines() {
	var b strings.Builder
	fmt.Fprintf(&b, "\x1b[10;1H\x1b[Ktyped: %s", p.typed)
	fmt.Fprintf(&b, "\x1b[11;1H\x1b[Ksubmitted: %s", p.last)
	fmt.Fprintf(&b, "\x1b[12;1H\x1b[Kctrl-c: %d", p.ctrlC)
	if p.bells > 0 {
		fmt.Fprintf(&b, "\x1b[13;1H\x1b[Kbells: %d", p.bells)
	}
	fmt.Fprintf(&b, "\x1b[10;%dH", len("typed: ")+len(p.typed)+1)
	os.Stdout.WriteString(b.String())
}
