// Package termquiet keeps looprig's commands from asking the terminal for
// its background colour when they start.
//
// Bubble Tea v1's package init asks Lip Gloss whether the terminal's
// background is dark, and Lip Gloss (through termenv) writes OSC 11 and a
// cursor position query to standard output and waits up to 5 s for the
// answer: every command of a binary that links Bubble Tea did so, `looprig
// version` included, and blocked on a terminal that does not answer. Its
// init here tells Lip Gloss first that the background is dark, so Lip
// Gloss never asks. Nothing of looprig's reads the answer: its themes say
// themselves whether they are dark, and it uses no adaptive colour.
//
// This package is a module of its own, early.looprig.invalid/termquiet,
// replaced by this directory in looprig's go.mod, for its import path:
// Go initializes, of the packages whose imports are initialized, the first
// by import path, and no path of module looprig sorts before
// github.com/charmbracelet/bubbletea, whereas this one does. So its init
// runs right after Lip Gloss's and before Bubble Tea's. It imports Lip
// Gloss only, and cli imports it for its side effect.
package termquiet

import "github.com/charmbracelet/lipgloss"

func init() { lipgloss.SetHasDarkBackground(true) }
