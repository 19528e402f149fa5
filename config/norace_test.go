//go:build !race

package config

// raceSlowdown scales the time ceilings of the tests (race_test.go).
const raceSlowdown = 1
