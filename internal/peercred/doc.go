// Package peercred tells who is at the other end of a Unix socket: the
// uid (every platform that can say, else an error, so that a caller
// refuses the peer) and the pid (Linux and macOS). The host's socket and
// an agent turn's hook socket both check that a peer is of the same user.
package peercred
