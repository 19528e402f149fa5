// Package benchmarks holds the benchmarks of the performance figures
// (docs/ARCHITECTURE.md, "Performance figures") that need more than one of
// looprig's packages (fsstore and the runtime together, the
// built command, the TUI over a real store), each run side by side with its
// baseline on the same disk in the same process.
//
// Every benchmark here runs a fixed schedule of interleaved rounds (ours,
// then the baseline, then ours again, …) and reports both sides and their
// ratio as metrics, so a shared, noisy machine shifts both alike. Run them
// with -benchtime=1x; -short selects the quick schedule. scripts/bench runs
// them several times and prints the table of figures.
//
// Nothing here asserts a time. The scale check (TestScale) runs only with
// LOOPRIG_SCALE=1.
package benchmarks
