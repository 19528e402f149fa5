// Package checkpoint owns workspace checkpoints: it turns a workspace
// directory into a checkpoint in a storage.BlobStore (see
// rig/storage/blobs.go) and back, compares checkpoints with each other
// (Diff, Compare) or with a directory (Differences, Scan), and brings a
// directory that is one checkpoint to another (Update).
//
// A checkpoint is stored as restic and kopia store snapshots: files' content
// in chunks (small files whole, large ones cut where their content says)
// appended to a few pack blobs; one tree per directory, naming where each
// entry's content or tree is; and a snapshot naming the root tree and
// every pack, whose digest is the checkpoint's name. docs/ARCHITECTURE.md
// ("Workspace checkpoints") describes the design; the formats are in
// tree.go and snapshot.go, the version 1 flat manifest in manifest.go.
//
// One concern per file: chunk.go (chunking and pack sizes), pack.go (a
// pack being written), tree.go (a directory's tree, its canonical encoding
// and strict decoding), snapshot.go (the snapshot), manifest.go (the flat
// Manifest a checkpoint is read into; the version 1 format), load.go (Load
// and References), paths.go (which paths and symlink targets are allowed),
// ignore.go (gitignore syntax, as git reads it) and filter.go (what a
// checkpoint leaves out; the walk asks it through walkfilter.go), scan.go
// (walking a workspace), read.go (reading and storing its files), index.go (the stat
// index that lets a Take skip unchanged files and directories), store.go
// (Take), content.go (reading a file's content back, verified),
// materialize.go (Materialize), update.go (Update), compare.go (Scan,
// Differences), diff.go and myers.go (Diff, unified text diffs), format.go
// (Diff as text), errors.go (typed errors). The stat_*.go, rename_*.go and
// sync_*.go files hold what differs between Linux and Darwin.
//
// The package does not journal: what it skips (symlinks leading out of the
// workspace, sockets, files changing while read) and what a rule leaves
// out it reports in Result, and a caller journals that.
package checkpoint
