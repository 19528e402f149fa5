// Package logfile keeps one ledger as one append-only file of frames (see
// package frame), with compare-and-swap appends that hold across goroutines
// and across processes sharing the file.
//
// # File naming
//
// A Log is given the path of its file and never chooses one. It uses that
// one file and no other: no segment files, no temp files, no lock files
// (the flock is taken on the log file itself). The file is created
// exclusively (O_EXCL) with mode 0600 by the first Append that writes,
// never through a symbolic link (O_NOFOLLOW), and must be a regular file.
// An absent file is an empty ledger; so is an empty file.
//
// fsstore keeps ledger <name> at <store>/ledgers/<name>.log. Each "/" in a
// ledger name is a subdirectory, and a directory segment that ends like
// one of fsstore's files (.lock, .epoch, .log or .kv) gets a "~" appended,
// so ledger "a" (ledgers/a.log) and ledger "a.log/b" (ledgers/a.log~/b.log)
// never collide.
//
// # Record format
//
// The file is a sequence of frames and nothing else: no file header, no
// footer, no padding, nothing on disk but the records. Each frame holds one
// record:
//
//	offset  size  field
//	0       4     magic "LRf1"
//	4       4     payload length n (uint32, little-endian, at most storage.MaxPayload)
//	8       8     sequence (uint64, little-endian)
//	16      8     writer epoch (uint64, little-endian)
//	24      n     payload
//	24+n    4     CRC-32C (Castagnoli) of bytes [0, 24+n)
//
// so a frame is 28 bytes longer than its payload. The first frame has
// sequence 1 and every next one the sequence after it: the sequence of the
// k-th frame is k, and the tip of a ledger is the sequence of its last
// frame. The writer epoch is whatever the appender passed (fsstore passes
// the epoch of the lease it holds on the ledger); a Log stores it and
// hands it back through Cursor.Epoch but never interprets it.
//
// A frame is valid when its magic matches, its length is within the limit,
// it is complete, its checksum matches and its sequence follows the one
// before it. Validation reads the whole file once, at Open, and after that
// only the frames other processes append. The sparse index Read seeks with
// (the offset of every IndexInterval-th frame) lives in memory only and is
// rebuilt by that scan.
//
// A torn tail is a frame that is not valid (typically incomplete, after a
// crash in the middle of a write) with no valid frame starting anywhere
// after it: to tell, the scan looks for the magic at every later offset
// and fully decodes, checksum included, each frame it finds there. A torn
// tail is repaired; any other damage is corruption (see Durability and
// recovery), reported with the byte offset of the bad frame. Frames of an
// append that crashed before its fdatasync returned may also survive
// whole: they were never acknowledged, and an appender that retries with
// the same expected tip gets a conflict rather than a duplicate.
//
// # Concurrency
//
// Within a process, a Log serialises everything that touches the file
// through a single token (a one-slot channel, so waiting honours contexts).
// Appends are group-committed in leader/follower style with no background
// goroutine: a caller queues its request and then either takes the token
// (becoming the leader, which commits the whole queue with one write and one
// fdatasync) or is acknowledged by another leader first.
//
// Across processes, every commit holds an exclusive flock on the log file
// for its check, write and sync. Under the lock the leader first makes sure
// the path still names its inode (reopening if the ledger was deleted or
// replaced) and that the file ends where it thinks it does; if another
// process appended, the new frames are validated and the cached tip moves
// on before the compare. Tip and Read make the same check, so they see
// other processes' appends.
//
// Waiting for the flock honours the context: with a context that can be
// cancelled the lock is polled with backoff, otherwise the call blocks in
// the kernel (fairer under cross-process contention). Open has no context
// and blocks. The lock is only ever held for one check+write+sync or one
// validation scan.
//
// # Durability and recovery
//
// Append returns nil only after its frames were written in one pwrite and
// fdatasync returned; the parent directory is fsynced after the file is
// created, and once more the first time a Log writes to a file it did not
// create. Open validates the whole file under the flock. A torn tail (an
// incomplete or invalid frame with no valid frame anywhere after it) is cut
// off and the truncation fsynced; a bad frame followed by a valid one, or a
// sequence gap, is corruption: Open fails with *storage.CorruptError and
// leaves the file untouched. Frames another process appends are validated
// the same way when a Log catches up with them.
//
// On Darwin, where fsync leaves the data in the drive's cache, each of
// these syncs is fcntl(F_FULLFSYNC) instead, falling back to fsync only
// where the file system refuses it (see fsutil.Fsync and fsutil.DataSync).
//
// If fdatasync fails, the Log tries to take the batch back and then refuses
// all further use with a sticky error: after a failed sync the page cache
// no longer says what is on disk. Reopen the file to go on.
//
// # Source files
//
//	log.go      the Log type, Open, Tip, Delete, Close and the token
//	file.go     which file the path names: open, create, adopt, drop, refresh
//	commit.go   Append and the group commit (batching, compare, write, fdatasync)
//	lock.go     the flock held around each commit and catch-up
//	scan.go     validation of frames from the cached end of the file
//	repair.go   torn-tail repair and the search for a later valid frame
//	reader.go   the pread read-ahead window scans and cursors share
//	cursor.go   Read and the Cursor
package logfile
