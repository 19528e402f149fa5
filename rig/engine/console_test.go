package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestNewConsoleSize(t *testing.T) {
	for _, tc := range []struct{ cols, rows, wantCols, wantRows int }{
		{0, 0, DefaultCols, DefaultRows},
		{-5, 10, DefaultCols, 10},
		{80, 24, 80, 24},
		{1 << 20, 1, maxTermSize, 1},
	} {
		if cols, rows := NewConsole(tc.cols, tc.rows).Size(); cols != tc.wantCols || rows != tc.wantRows {
			t.Errorf("NewConsole(%d, %d).Size() = %d, %d", tc.cols, tc.rows, cols, rows)
		}
	}
	var zero Console
	if cols, rows := zero.Size(); cols != DefaultCols || rows != DefaultRows {
		t.Errorf("zero Console size %d, %d", cols, rows)
	}
}

func TestConsoleResizeDetached(t *testing.T) {
	c := NewConsole(0, 0)
	if err := c.Resize(100, 30); err != nil {
		t.Fatal(err)
	}
	if cols, rows := c.Size(); cols != 100 || rows != 30 {
		t.Fatalf("Size = %d, %d", cols, rows)
	}
	for _, bad := range [][2]int{{0, 10}, {10, 0}, {-1, 5}, {70000, 5}, {5, 70000}} {
		if err := c.Resize(bad[0], bad[1]); err == nil {
			t.Errorf("Resize(%d, %d) accepted", bad[0], bad[1])
		}
	}
	if cols, rows := c.Size(); cols != 100 || rows != 30 {
		t.Fatalf("Size after invalid resizes = %d, %d", cols, rows)
	}
}

// TestConsoleNoTerminal: a Console never attached (the zero value too) has
// no terminal; an ended ctx does not change that answer.
func TestConsoleNoTerminal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []*Console{NewConsole(0, 0), {}} {
		for _, ctx := range []context.Context{context.Background(), ctx} {
			if hidden, err := c.Write(ctx, []byte("x")); hidden || !errors.Is(err, ErrNoTerminal) {
				t.Errorf("Write = %v, %v", hidden, err)
			}
			if err := c.EOF(ctx); !errors.Is(err, ErrNoTerminal) {
				t.Errorf("EOF = %v", err)
			}
			if err := c.Interrupt(ctx); !errors.Is(err, ErrNoTerminal) {
				t.Errorf("Interrupt = %v", err)
			}
		}
		if c.EchoOff() {
			t.Error("EchoOff without a terminal")
		}
		c.detach(nil) // harmless
	}
}

func TestInputTimeoutError(t *testing.T) {
	cause := errors.New("user gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	err := inputTimeout(ctx, 3, 10)
	var te *InputTimeoutError
	if !errors.As(err, &te) || te.Written != 3 || te.Len != 10 || !errors.Is(err, cause) {
		t.Fatalf("err = %#v", err)
	}
	if !strings.Contains(err.Error(), "wrote 3 of 10 bytes") {
		t.Fatalf("message %q", err)
	}
	// A write deadline passing a moment before ctx's timer: still a
	// deadline.
	if err := inputTimeout(context.Background(), 0, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}
