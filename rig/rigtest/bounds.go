package rigtest

// boundsCases bound what a session may do when things go wrong: a shutdown
// that abandons an engine ignoring its context (stuckengine.go), and a
// creation whose lease is broken while it runs (brokencreation.go).
var boundsCases = []testCase{
	{"ShutdownAbandonsEngineAtDeadline", testShutdownStuckDeadline},
	{"ShutdownGraceWithoutDeadline", testShutdownStuckGrace},
	{"AbandonedTurnRecordsNothingMore", testShutdownStuckOutput},
	{"FailedCreationKeepsBreakersRecords", testCreationBrokenKeepsRecords},
	{"FailedCreationSeesBreakersFence", testCreationBreakerFence},
	{"FailedCreationSeesBreakersCatalog", testCreationBreakerCatalog},
	{"FailedCreationAfterSilentBreak", testCreationSilentBreak},
}
