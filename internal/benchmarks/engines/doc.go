// Package engines compares search engines for `looprig search` on one
// corpus (issue 36, item 4): looprig's own index (package search: a bbolt
// file of zstd blocks of 512 lines with trigram postings per block),
// SQLite FTS5 (modernc.org/sqlite, no cgo) with its unicode61 tokenizer
// and with its trigram tokenizer, and bleve v2 (scorch).
//
// It is a module of its own so that the engines it tries never enter
// looprig's go.mod: root `go test ./...`, `go vet ./...` and staticcheck
// skip it. BenchmarkEngines measures, for each engine, on the corpus of
// BenchmarkSearch (internal/benchmarks: GenerateSearchCorpus):
//
//   - the full rebuild from the journals, as MB of journal per second;
//   - the index's size on disk over the journals';
//   - a rare word (eaddrinuse), a phrase ("error auth: kaka "), and the
//     regexp /\bdea[0-9a-f]{5} / (a 3-character literal, as in
//     BenchmarkSearch): p50 and p95 of the query in this process, on an
//     open index, every hit's line read back;
//   - the rare word again with the index opened and closed around it.
//
// Run it with
//
//	cd internal/benchmarks/engines && go test -run '^$' -bench . -benchtime 1x
//
// (-short: 20 sessions and fewer rounds; LOOPRIG_SEARCH_SESSIONS and
// LOOPRIG_SEARCH_LINES set the size, as for BenchmarkSearch;
// LOOPRIG_ENGINES=fts5-unicode61,bleve keeps only those beside looprig's;
// LOOPRIG_BENCH_DIR keeps the corpus and indexes there). RESULTS.md holds
// the runs and what they say.
package engines
