//go:build !linux && !darwin

package engine

import (
	"errors"
	"os"
	"syscall"
)

// Without pty support no terminal is ever attached to a Console; these are
// never reached with a terminal.

const vdisable = 0

type termState struct {
	echo, isig, icanon bool
	vintr, veof        byte
}

var errNoPTY = errors.New("pseudo-terminals not supported on this platform")

func getTermState(*os.File) (termState, error) { return termState{}, errNoPTY }
func setWinsize(*os.File, int, int) error      { return errNoPTY }
func foregroundPgrp(*os.File) (int, error)     { return 0, errNoPTY }
func killGroup(int, syscall.Signal) error      { return errNoPTY }
