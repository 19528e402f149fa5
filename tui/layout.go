package tui

// Minimum window; below it View shows the "terminal too small" screen.
const (
	minWidth  = 40
	minHeight = 10
	wideAt    = 120 // side by side from here
	stackAt   = 60  // stacked from here; list only below
)

type layoutMode int

const (
	modeSingle layoutMode = iota // the focused pane only (very narrow)
	modeStacked
	modeWide
)

// geometry is the split of the window into panes; all heights include
// the pane's frame.
type geometry struct {
	mode                       layoutMode
	bodyH                      int
	listW, listH               int
	detailW, detailH           int
	eventsW, eventsH           int
	stripH, inputH             int
	showList, showDet, showEvt bool
}

func (m *model) geometry() geometry {
	w, h := m.width, m.height
	g := geometry{}
	if m.input != nil {
		g.inputH = 1
	}
	g.stripH = len(m.stripLines())
	g.bodyH = h - 1 - g.stripH - g.inputH
	switch {
	case w >= wideAt && g.bodyH >= 10:
		g.mode = modeWide
	case w >= stackAt && g.bodyH >= 14:
		g.mode = modeStacked
	default:
		g.mode = modeSingle
	}
	switch g.mode {
	case modeWide:
		g.listW = min(max(w*2/5, 50), 90)
		g.detailW, g.eventsW = w-g.listW, w-g.listW
		g.listH = g.bodyH
		g.detailH = min(max(g.bodyH*2/5, 6), 14)
		g.eventsH = g.bodyH - g.detailH
		g.showList, g.showDet, g.showEvt = true, true, true
	case modeStacked:
		g.listW, g.detailW, g.eventsW = w, w, w
		g.listH = max(6, g.bodyH*2/5, min(g.bodyH/2, 9))
		if g.bodyH >= 24 {
			g.detailH = min(9, g.bodyH-g.listH-6)
		}
		g.eventsH = g.bodyH - g.listH - g.detailH
		g.showList, g.showDet, g.showEvt = true, g.detailH > 0, true
	default:
		g.listW, g.detailW, g.eventsW = w, w, w
		switch m.focus {
		case paneEvents:
			g.eventsH, g.showEvt = g.bodyH, true
		case paneDetail:
			g.detailH, g.showDet = g.bodyH, true
		default:
			g.listH, g.showList = g.bodyH, true
		}
	}
	return g
}

// listSpace is the room of the sessions pane: none below the minimum
// window, a page of the window while another pane has it, else its pane.
func (m *model) listSpace() listSpace {
	if m.width < minWidth || m.height < minHeight {
		return listSpace{}
	}
	g := m.geometry()
	if !g.showList {
		return listSpace{rows: max(1, m.height-4)}
	}
	return listSpace{shown: true, paneH: g.listH}
}

// eventRows is how many lines the events pane shows.
func (m *model) eventRows() int {
	g := m.geometry()
	if !g.showEvt {
		return max(1, m.height-4)
	}
	return max(1, g.eventsH-2)
}
