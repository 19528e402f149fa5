package cli

import (
	"time"

	"looprig/host"
	"looprig/rig"
)

// Hooks the end-to-end tests build into the binary they run (the build
// tag looprig_e2e: testhooks_e2e.go sets them); nil in every other build,
// so that no environment variable changes what a released looprig does.
var (
	// testRigOptions adds rig options to every rig the command defines.
	testRigOptions func() []rig.Option
	// testMaterializeProgress wraps the function a restore tells how far
	// it is in bringing the workspace back from its checkpoint.
	testMaterializeProgress func(func(done, total int64)) func(done, total int64)
	// testHostOptions adds options to the server `looprig host` runs.
	testHostOptions func() []host.Option
	// testTUIClock is the TUI's clock (nil: the wall clock).
	testTUIClock func() func() time.Time
	// testScreenFrames is the frame interval and the quiet spell of a
	// full-screen program's screen (screen_term.go; 0: theirs).
	testScreenFrames func() time.Duration
)
