// Package checkpoint owns workspace checkpoints: it turns a workspace
// directory into a manifest (every regular file, inner symlink and empty
// directory, sorted by path) whose files' contents are content-addressed
// blobs in a storage.BlobStore (see rig/storage/blobs.go), and back; and it
// compares checkpoints, with each other (Diff) or with a directory on disk
// (Differences).
//
// One concern per file: manifest.go (the manifest, its canonical encoding
// and its strict decoding), paths.go (which paths and symlink targets are
// allowed), ignore.go (the .looprigignore subset of gitignore), index.go
// (the stat cache that lets a Take skip unchanged files), scan.go (walking
// a workspace), store.go (Take), materialize.go (Materialize), compare.go
// (Differences), diff.go and myers.go (Diff between two manifests, unified
// text diffs), errors.go (typed errors). The stat_*.go and rename_*.go files
// hold what differs between Linux and Darwin.
//
// The package does not journal: what it skips (symlinks leading out of the
// workspace, sockets, files changing while read) it reports in Result, and
// a caller journals that.
package checkpoint
