// Package host serves one live session (*rig.Session) on a unix socket, so
// that the process holding the session's lease (a background `looprig host
// ID`) outlives the terminal that started it, and the TUI and the CLI
// attach to it and detach from it as clients.
//
// # Socket directory
//
// SocketDir(storeKey) is $XDG_RUNTIME_DIR/looprig/<hash>/ when
// XDG_RUNTIME_DIR is set and usable (an absolute directory owned by the
// current uid, mode 0700), else /tmp/looprig-<uid>/<hash>/, where <hash> is
// a short hex hash of storeKey (the store's canonical directory or URL), so
// two stores never share sockets. Missing levels are created 0700. Before
// use every level looprig owns is checked as tmux checks its socket
// directory: a directory (Lstat: not a symlink), owned by the current uid,
// mode exactly 0700; anything else is refused with *UnsafeSocketDirError,
// whose Fix says what to do. SocketPath(dir, id) names the socket of one
// session, <id>.sock, and refuses (*SocketPathTooLongError) a path longer
// than MaxSocketPath bytes, the bound that fits every platform's sun_path.
//
// # Server
//
// Listen creates the socket in a checked directory and makes it 0600
// before anything is accepted (the 0700 directory keeps others out of the
// window between bind and chmod; the process umask is never touched). A
// socket file already there is removed only when the caller says it is
// stale — the caller holds the session lease, so nobody else serves it.
//
// Serve serves one session until its context ends or the session ends
// (Done). Every accepted connection is checked with SO_PEERCRED (getpeereid
// where that is what the platform has): a peer of another uid is sent an
// error and closed. The peer's pid (SO_PEERCRED, LOCAL_PEERPID) and what
// the system says of its process then (rig.PeerClient) are kept: a
// respond_gate or input request from a process inside the session's own
// turns, or from one that is gone or is another one now, is refused with
// kind from_turn (rig.FromTurnError) and journaled (event.Refused), and
// an answer that is taken is journaled with its client
// (GateResolved.By: the request's "from", the pid, whether the process
// had a controlling terminal). Each connection has a reader, a writer and, while
// subscribed, a forwarder goroutine, all owned by the connection, which is
// owned by the server: Serve returns only when all of them have ended.
//
// A client that stops reading never blocks the session or other clients.
// The hub never blocks on a subscriber, and each connection's send queue is
// bounded (events and bytes, the lines its writer took and has not written
// included). A live OutputDelta that does not fit (less a reserve kept for
// durable events) is dropped for that client, which is told how many with
// a "dropped" message (its transcript takes the bytes from the next
// checkpoint: both carry offsets); a durable event that does not fit waits
// for room: the forwarder stops reading, its hub subscription falls behind,
// and its rig.Follower reads the journal again from the last event it
// queued once there is room. What the forwarder holds meanwhile, the rest
// of the batch it read (a replayed chunk of the journal: about 1 MiB,
// rig's replay chunks; or what the hub had queued), counts in the output
// budget with the queues (see Bounds). Replies are bounded by
// backpressure: the reader stops reading requests while 64 replies or 1
// MiB of them wait, or 8 requests run.
//
// # Bounds
//
// A host's memory is bounded as a whole (the defaults; see the options):
//
//   - at most DefaultMaxClients (32) connections at once: one more is sent
//     an error of kind too_many_clients and closed (Dial returns it as a
//     *RemoteError);
//   - per connection, at most DefaultQueueBytes (4 MiB) and
//     DefaultQueueEvents (1024) of queued event lines, the ones its writer
//     holds included (a single longer line is taken alone when nothing else
//     is queued), of which the writer takes at most 256 KiB at a time (or
//     one line); replies, 1 MiB before its reader stops reading requests
//     (and one more per request still running); a partial request line of
//     at most MaxLine (1 MiB), the room of a long one given back once it is
//     read; 64 KiB buffers each way; and its subscription's hub queue (at
//     most 256 events, whose text is shared with the other subscribers);
//   - the event lines queued on all connections and not taken by their
//     writers, and the batches their forwarders read and have not queued
//     yet (each envelope's footprint: footprint.go), at most
//     DefaultOutputBudget (32 MiB) together. A subscription reads the
//     journal in chunks bounded in bytes (about 1 MiB, and at most 1,024
//     events: rig's replayChunk and replayBytes), at most 4 chunks at once
//     in the process (rig's replayReaders), and a batch it read is charged
//     to the budget before its lines are queued (conn.hold). An event or a
//     batch that fits its connection's queue but not the budget makes a
//     connection give what it holds up: the one whose writer has been
//     waiting on its client since before the previous time this happened
//     (a client that does not read) before any other, else the one that
//     holds the most. Its subscription ends with a "lost" message whose
//     last_seq is the last durable event it still gets (its writer had
//     taken it): its client subscribes again after the last event it got
//     (rig.Follow does, on the same connection) and reads the rest from
//     the journal. When the connection that needs room holds the most
//     itself, it gives up its own (a delta is only dropped). A client that
//     never reads thus ends up holding only what its writer took, and the
//     session and the clients that read do not slow down.
//
// In all, at most 32 MiB of queued output and batches being forwarded
// plus, per connection, 256 KiB (or one line of at most MaxServerLine)
// being written, a 1 MiB request line, about 1 MiB of replies and 128 KiB
// of buffers, and 4 journal chunks being read (a read buffer and a chunk
// each: about 8 MiB): about 115 MiB for 32 connections at the very worst
// (every client with a partial request line and replies waiting), about
// 50 MiB for 32 clients that subscribe and never read, and the
// subscriptions' hub queues. `looprig host` sets the Go runtime's soft
// memory limit to MemoryLimit (112 MiB, unless GOMEMLIMIT is set) so that
// its heap does not grow to twice that before it is collected: 32 clients
// subscribed from the start of a 43 MB journal that never read leave a
// host's peak resident set at about 120 MiB, 150 MiB at most
// (BenchmarkHostReplaySubscribers, the cli test
// TestHostMemoryUnderStuckReplays).
//
// # Protocol, version 5
//
// protocol.go declares every message, both ways: its "type", its struct
// and JSON fields, who sends it, what answers it and the version that
// brought it. codec.go is the one codec of them, which the server and
// the Client both use (encode, decodeInto; decodeRequest and decodeMsg
// for each side), with the one error object (AppendErrorJSON) and the
// one holder object (Holder). protocol_golden_test.go pins the bytes of
// one of every message.
//
// Version 5 differs from 4 in what events carry (GateResolved's "by",
// the Refused event, Attention's "agent": a client of version 4 could not
// decode them), respond_gate's "from", and the error kind from_turn.
// Version 4 differed from 3 in the "progress" message: a submit or a
// shutdown that waits for a checkpoint of the workspace (the one that
// follows the last turn's end, which the next turn waits for; a
// shutdown's own) is answered with a progress message every quarter of a
// second until its reply, so that its client, which a checkpoint of
// minutes would otherwise leave without a word, says how far it is and
// bounds the call by the host's silence rather than its length; and in
// the status's "checkpointing". A shutdown's client hears from the host
// every quarter of a second until the reply even when no checkpoint is
// taken (a progress message without "checkpoint", while the running turn
// stops), so that a host that says nothing is known to be stopped or
// wedged. Version 3 differed from 2 in the events a session journals (Attention,
// AttentionSeen: a client of version 2 could not decode them), the
// "attention_seen" request and the status's "attention". Version 2 differed
// from 1 in what events carry: OutputDelta and TurnOutput have an
// "offset", and the host no longer ends a subscription that fell behind;
// it sends "lost" only when a subscription gives its queue up to the
// output budget (see Bounds).
//
// Newline-delimited JSON; a request line is at most MaxLine bytes (a longer
// one is answered with an error and the connection closed: the reader never
// holds more than MaxLine), a server line at most MaxServerLine. The client
// speaks first:
//
//	→ {"type":"hello","protocol":5,"version":"0.9.0"}
//	← {"type":"hello","protocol":5,"version":"0.9.0","session":"<id>","pid":4242,"epoch":3}
//
// A different protocol is answered with an error message naming both
// versions and how to stop the old host (looprig stop ID, or kill its pid),
// and the connection is closed. Then requests, each with an id its reply
// echoes:
//
//	→ {"type":"status","id":1}
//	← {"type":"reply","id":1,"ok":true,"status":{"session":"…","epoch":3,"tip":12,"turn":null,…}}
//	→ {"type":"submit","id":2,"input":"make test"}
//	← {"type":"progress","id":2,"checkpoint":{"trigger":"turn","turn_id":"…","since":"…","files":10000,"files_done":7421,"bytes":20480000,"bytes_done":15198208}}
//	← {"type":"reply","id":2,"ok":true,"turn_id":"…","index":4}
//	→ {"type":"submit","id":3,"input":"ls"}
//	← {"type":"reply","id":3,"ok":false,"error":{"type":"BusyError","kind":"busy","message":"…","index":4,"turn_id":"…"}}
//	→ {"type":"interrupt","id":4}
//	→ {"type":"respond_gate","id":5,"gate_id":"…","approve":true,"from":"tui"}
//	→ {"type":"shutdown","id":6}
//	→ {"type":"subscribe","id":7,"after_seq":10}
//	← {"type":"reply","id":7,"ok":true,"sub":1}
//	← {"type":"event","sub":1,"event":{"seq":11,"type":"TurnOutput","session":"…","loop_id":"…","at":"…","turn_id":"…","offset":0,"text":"ok\n","elided":0}}
//	← {"type":"dropped","sub":1,"count":17,"total":17}
//	← {"type":"lost","sub":1,"last_seq":40,"message":"…resubscribe after seq 40"}
//	← {"type":"end","sub":1,"last_seq":57,"reason":"session_stopped"}
//	→ {"type":"unsubscribe","id":8,"sub":1}    (sub: only if still current; 0 or absent: whichever is open)
//	→ {"type":"detach","id":9}
//	→ {"type":"input","id":10,"input":"yes\n","from":"tui"}   (to the running turn's terminal)
//	← {"type":"reply","id":10,"ok":true,"hidden":true}         (hidden: echo was off; no text is journaled)
//	→ {"type":"input","id":11,"eof":true,"from":"cli"}
//	→ {"type":"resize","id":12,"cols":120,"rows":40}            (the running turn's and the next turns' terminal)
//	→ {"type":"attention_seen","id":13,"through":57,"from":"tui"} (the user looked: the attention recorded up to seq 57 is dealt with; 0: whatever is pending)
//
// A submit waits in the host for the checkpoint that follows the last
// turn's end (rig.Session.WaitCheckpoint: as long as the checkpoint's own
// bound, not the request's 30 s), then starts the turn; a shutdown waits
// for it and takes its own. While they wait, "progress" messages carrying
// the request's id say how far the checkpoint is (files and bytes of the
// workspace, done so far; "trigger" says which: turn, stop, handoff), at
// most every quarter of a second, none when the client has replies piling
// up; the reply ends them. A client that asked nothing of the kind
// ignores them. The status's "checkpointing" is the same object, null
// when the session takes no checkpoint, and "turn" is null once a turn's
// end is journaled, while its checkpoint runs.
//
// The status says whether the running turn has a terminal ("terminal")
// and whether its echo is off ("echo_off"), so a client can mask what is
// typed, and what the turn asked of the user since the user last looked
// ("attention": reason, text, since, seq; null when nothing is pending). Input to a turn without one is kind no_terminal; input the turn
// does not read within 5 s, input_timeout. An interrupt sends a terminal
// turn ^C first, then signals its process group if it goes on.
//
// Errors have the shape of the CLI's JSON errors: type, kind, message and
// the error's typed fields, rig/explain's classification (Describe), with
// "stage" for a restore and "remedy" unless the kind implies it (a
// "holder" is {"acquired","host","pid"}, as ls --json prints it); only the
// protocol's own errors add a hint (how to stop a host that speaks
// another protocol). Events have the shape of the lines of
// `looprig run --json` (event.MarshalEnvelope). An unknown request type is
// answered with an error and the connection stays open; a malformed line
// too, but the third in a row closes it. A message the connection cannot
// go on after ("error": a refused peer, a protocol mismatch, an oversize
// line) or the end of the server ("bye", with the reason) comes last before
// the server closes the connection.
//
// # Subscribe: no gap, no duplicate
//
// subscribe{after_seq} follows the session with rig.Follow (its hub
// subscription is open before the reply; the journal after after_seq is
// read, then the live events forwarded, durable ones at or below the last
// one sent skipped). The client thus gets every durable event after
// after_seq exactly once, in sequence order. When the forwarder falls behind
// the hub, the Follower recovers from the journal without the client
// noticing. A connection has at most one subscription; a new subscribe
// replaces it.
//
// # Client
//
// Dial does the hello (*ProtocolMismatchError on a version mismatch) and
// returns a Client whose calls (Status, Subscribe, Submit, Interrupt,
// RespondGate, SeeAttention, Shutdown, …) each take a context. A Client is a rig.Feed:
// presenters follow a session with rig.Follow(ctx, client, after), which
// subscribes again when a stream falls behind. A host's error comes back as
// *RemoteError, which explain.Explain classifies as the host did, errors.As
// also turns into *rig.BusyError, *rig.NoTurnError, *rig.NoGateError or
// *rig.FromTurnError
// and errors.Is matches with rig.ErrSessionClosed. Stream.Next returns the events as event.Envelope
// values; the client's own reader never blocks on a stream that is not
// read (it drops deltas and ends the stream with *StreamLostError as the
// server does), so replies keep flowing.
//
// # Starting a host
//
// Start runs `looprig host …` detached, with a pipe as descriptor 3
// (ReadyFDEnv), and waits for its report there: one JSON line, the last
// the host writes on it, {"ok":true,"ready":{…}} once it serves its
// session (Ready: its socket, pid, epoch and what the restore did) or
// {"ok":false,"error":{…}} with why it could not. Before the report a
// restoring host writes, now and then (at most every 100 ms, and when it
// is done), how far it is in bringing the workspace back from its
// checkpoint, as rig.WithMaterializeProgress tells it:
//
//	{"ok":false,"progress":{"materialize":{"done":12582912,"total":30408704}}}
//
// Start hands each to StartSpec.Progress (the latest one when the caller
// is slower than the host), so that `run`, `take`, `restore --detach` and
// the TUI show the same progress an in-process restore draws.
package host
