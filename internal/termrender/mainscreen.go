package termrender

// The main screen. A program that addresses the cursor (CSI H, f, d) or
// clears the screen (CSI J) without taking the alternate screen, as top
// and watch do, draws on the terminal's screen: its last ScreenRows lines.
// So does the renderer: the screen is the last ScreenRows lines of the
// turn (all of them while the turn has fewer), and each frame drawn again
// overwrites the one before instead of adding lines. A turn's lines then
// keep the last frame, as a terminal's scrollback would, and not every
// frame the program drew.
//
// Clearing the whole screen (CSI 2J, or CSI J from its first cell, as
// `clear` does) keeps what was on it, as tmux and most terminals keep it
// in their scrollback: the screen starts below its last line of text
// (floor), the cursor on the same row of the new screen. Lines are
// output, and a transcript does not lose them to a clear.
//
// Lines count from the turn's first (evicted ones included), so the
// screen is found the same whatever the Window; a row that is no longer
// held (Window smaller than the screen) is clamped to the oldest held
// line, as a cursor-up is.

// screenTop is the number, counted from the turn's first line, of the
// screen's first line.
func (r *Renderer) screenTop() int {
	return max(r.floor, r.evicted+r.n-r.scrRows)
}

// moveTo is CSI row;col H: the cursor to the row-th line of the screen
// (1-based), column col. A row below the last line adds lines, as a
// screen's rows exist before they are written.
func (r *Renderer) moveTo(row, col int) {
	r.moveToRow(row)
	r.col = min(max(col, 1)-1, r.max-1)
}

// moveToRow is CSI row d: the cursor to the row-th line of the screen,
// its column kept.
func (r *Renderer) moveToRow(row int) {
	target := r.screenTop() + min(max(row, 1), r.scrRows) - 1 // counted from the turn's first line
	last := r.evicted + r.n - 1
	if target <= last {
		r.setRow(target - r.evicted) // clamped at the oldest held line
		return
	}
	col := r.col
	for range target - last {
		r.setRow(r.n - 1)
		r.newLine()
	}
	r.col = col
}

// eraseScreen is CSI J: 0 erases from the cursor to the end of the
// screen, 1 from its start to the cursor, 2 all of it (keeping its text
// above the new screen: clearScreen). 3 (the scrollback) erases nothing:
// lines that left the screen are the turn's output.
func (r *Renderer) eraseScreen(mode int) {
	top := r.screenTop() - r.evicted // held index of the screen's first line (negative: not held)
	switch {
	case mode == 2 || mode == 0 && r.row == top && r.col == 0:
		r.clearScreen(top)
	case mode == 0:
		r.erase(0)
		for i := r.row + 1; i < r.n; i++ {
			r.clearLine(r.lineAt(i))
		}
	case mode == 1:
		for i := max(top, 0); i < r.row; i++ {
			r.clearLine(r.lineAt(i))
		}
		r.erase(1)
	}
}

// clearScreen clears the screen whose first line is the held line top:
// the screen moves below its last line of text (none: nothing moves), the
// cursor to the same row of it.
func (r *Renderer) clearScreen(top int) {
	last := -1
	for i := r.n - 1; i >= max(top, 0); i-- {
		if !r.lineAt(i).empty() {
			last = i
			break
		}
	}
	if last < 0 {
		return
	}
	// The cursor's row on the screen, counted from its first held line
	// (with a Window smaller than the screen, the cursor was clamped there).
	row, col := r.row-max(top, 0), r.col
	r.floor = r.evicted + last + 1
	r.moveToRow(row + 1)
	r.col = col
}

// clearLine blanks l.
func (r *Renderer) clearLine(l *line) {
	r.held -= len(l.cells)
	l.cells = l.cells[:0]
	l.comb = nil
	l.dirty = true
}
