//go:build race

package themes

// raceSlowdown scales the time ceilings of the tests: the race detector
// makes the byte-at-a-time scan of a document about ten times slower
// than the built command's, which the ceilings are about.
const raceSlowdown = 10
