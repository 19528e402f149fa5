package rigtest

import (
	"os"
	"regexp"
	"testing"
)

const (
	helperEnv       = "LOOPRIG_RIGTEST_HELPER"
	helperStoreEnv  = "LOOPRIG_RIGTEST_STORE"
	helperWSEnv     = "LOOPRIG_RIGTEST_WORKSPACES"
	helperMarkerEnv = "LOOPRIG_RIGTEST_MARKER"
	helperTestName  = "RigtestHelper"
)

// HelperMain runs a helper-process role of the crash tests when the
// environment names one, and never returns then; otherwise it returns at
// once. Call it first thing in TestMain, before m.Run.
//
// A helper runs inside testing.Main, so the backend's Reopen gets a real
// *testing.T.
func HelperMain(b Backend) {
	role := os.Getenv(helperEnv)
	if role == "" {
		return
	}
	match := func(pat, str string) (bool, error) { return regexp.MatchString(pat, str) }
	testing.Main(match, []testing.InternalTest{{
		Name: helperTestName,
		F:    func(t *testing.T) { runHelper(t, b, role) },
	}}, nil, nil)
}
