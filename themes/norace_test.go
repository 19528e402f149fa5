//go:build !race

package themes

// raceSlowdown scales the time ceilings of the tests (race_test.go).
const raceSlowdown = 1
