package rigtest

import (
	"errors"
	"testing"
)

// as is errors.As that fails the test when err is not a *E.
func as[E error](t testing.TB, err error, what string) E {
	t.Helper()
	var target E
	if err == nil {
		t.Fatalf("%s: got no error, want %T", what, target)
	}
	if !errors.As(err, &target) {
		t.Fatalf("%s: got %T (%v), want an error errors.As finds as %T", what, err, err, target)
	}
	return target
}

var errInjected = errors.New("rigtest: injected fault")
