package cli

import (
	"fmt"
	"strings"
)

const globalFlagsHelp = `Global flags (before or after the command):
  --store DIR     the store (default $LOOPRIG_STORE, else $XDG_STATE_HOME/looprig,
                  else ~/.local/state/looprig; created with mode 0700 on first use)
                  or nats://HOST:PORT[/PREFIX], a store shared through NATS JetStream
                  (credentials from $NATS_CREDS or $NATS_TOKEN, never in the URL)
  --config FILE   the configuration file (default $XDG_CONFIG_HOME/looprig/config.toml,
                  else ~/.config/looprig/config.toml; a missing default file is fine,
                  a missing --config file is an error)
  --theme NAME    the TUI theme
  -h, --help      help
`

func helpMain() string {
	var b strings.Builder
	b.WriteString(`looprig - durable, restorable terminal sessions

Usage:
  looprig [GLOBAL FLAGS]                 the terminal UI (needs a terminal; see README "The terminal UI")
  looprig [GLOBAL FLAGS] COMMAND [ARGS]

Commands:
`)
	for _, c := range commands {
		name := c.name
		if name == "lease" {
			name = "lease break"
		}
		fmt.Fprintf(&b, "  %-12s %s\n", name, c.brief)
	}
	b.WriteString("\n" + globalFlagsHelp + `
Exit codes: 0 ok, 1 error, 2 usage, 3 restore failed, 4 lease held or lost;
'run' exits with its turn's exit code (125 when looprig itself failed).
With --json, errors are printed to stdout as {"error":{"type":..,"kind":..,"message":..}}.

Examples:
  looprig demo                          leave a crashed session to restore
  looprig ls                            see it, state "crashed"
  looprig restore 1a2b3c4d              restore it
  id=$(looprig new --title build)       create a session
  looprig run "$id" -- make test        run one turn in it, in a host run starts for it
                                        (an SSH connection that drops only detaches run)
  looprig stop "$id"                    shut the session's host down (the session is idle)

Run 'looprig COMMAND --help' for the details of a command.
`)
	return b.String()
}

const helpLs = `Usage: looprig ls [--json] [-l|--long]

List every session of the store: state, id, title, profile, lease epoch,
holder (pid@host) when held, the open turn and the last update. It never
takes a lease and never waits for one, so it works while other processes
hold sessions; a session whose records cannot be read is listed as broken
with the reason.

States: live (held by this process), held (by another process), idle (shut
down cleanly), crashed (nobody holds it and it was not shut down: restore
it), broken (its catalog or journal cannot be trusted; the reason is shown).

Flags:
  --json       print a JSON array, one object per session:
               {"id","short_id","state","title","profile","epoch",
                "holder":{"acquired","host","pid"}|null,"open_turn","turn_index",
                "open_gate","updated","reason","engine","shell","turns","last_seq","created",
                "turn_since","gate_since",
                "last_end":{"turn_id","index","outcome","exit_code","reason","started","ended"}|null,
                "attention":{"reason","text","since","turn_id"}|null,
                "checkpoint":{"manifest","files","bytes","at"}|null,
                "conversation":{"agent","id"}|null}
               attention: the running turn asked for you (its program rang the
               bell, reason "bell", or sent a desktop notification, "osc9" or
               "osc777", or an agent asked for you, "agent"; its text is
               "text") since anyone last looked at the
               session (attach, the terminal UI); since: its first unseen call.
               conversation: an agent session's (engine claude or codex)
               conversation id, as the agent's own --resume takes it
  -l, --long   show full ids instead of the first 8 characters

Example:
  looprig ls --json | jq -r '.[] | select(.state == "crashed") | .id'
  looprig ls --json | jq -r '.[] | select(.open_gate != null) | .id'   # waiting at a gate
  looprig ls --json | jq -r '.[] | select(.attention != null) | .id'   # asking for you
`

const helpNew = `Usage: looprig new [--rig NAME] [--title T] [--seed DIR] [--detach]
                   [--placement session|exclusive|shared --root DIR] [--json]

Create a session from a profile, print its id on stdout, and shut it down
cleanly (state idle); with --detach, leave it live in a background host
instead. Use 'looprig run ID -- INPUT' to run turns in it.

Flags:
  --rig NAME         the profile (default: default_profile of the configuration,
                     else "default"; built in: "default" runs turns in your shell,
                     "demo" runs the demo engine)
  --title T          the session's title
  --seed DIR         copy DIR into the new, empty workspace first (not with shared
                     placement; symlinks leaving DIR and special files refuse it)
  --placement P      where the workspace is: session (a directory of its own in the
                     store), exclusive (DIR, one session at a time) or shared (DIR,
                     no lease); exclusive and shared need --root
  --root DIR         the workspace root of exclusive and shared placement
  --detach           keep the session live in a background host ('looprig host'),
                     which outlives this terminal; 'looprig stop ID' shuts it down
  --json             print {"id","epoch","short_id","title","profile","shell","workspace"}
                     (with --detach also "pid", the host's, and "detached":true)

The shell: a turn runs as SHELL -c INPUT, SHELL being the profile's shell
(key shell in the configuration file, an absolute path), else $SHELL when
it is the absolute path of an executable file, else /bin/sh. new prints the
shell it chose, and the session records it: a restore under which the shell
resolves differently (another $SHELL) is drift, like a changed term, and is
adopted and journaled.

A session created with --placement/--root records them; restore it with the
same flags (or --accept-drift), since its profile says otherwise.

Examples:
  id=$(looprig new --title "nightly build")
  looprig new --rig demo --json
`

const helpRun = `Usage: looprig run ID [--json] [--detach|--in-process] [--rig NAME] [--accept-drift]
                   [--placement P --root DIR] -- INPUT...

Run INPUT (the words after "--" joined with spaces) as one turn of session
ID (a full id or a unique prefix of at least 4 characters), stream its
output until the turn ends, and exit with the turn's exit code, as
'docker run' does: a command killed by signal N exits 128+N, an
interrupted turn 130, a failed turn (or one denied at a gate) 1. When
looprig itself fails (restore refused, lease held, session busy, store
unreadable) it exits 125 and prints the error; usage errors exit 2.
INPUT runs as SHELL -c INPUT: the profile's shell, else $SHELL of the
process that hosts the session, else /bin/sh ('looprig new --help').

Where the turn runs: in the session's host, a background process that
does not depend on this terminal. When the session is live in a host on
this machine (looprig host ID, the TUI, new/restore/run --detach, an
earlier run), run submits the turn to that host and follows it there;
otherwise it first starts a host for the session, which restores it (a
restore the host refuses, for a held lease or drift, is run's failure:
exit 125). Either way the session stays live in its host afterwards:
'looprig stop ID' shuts it down. A hangup (an SSH connection that drops,
the terminal closed) or a kill ends run only: the turn runs on in the
host, and 'looprig attach ID' or 'looprig wait ID' picks it up. A session
running another turn refuses it (exit 125, "busy"). If the host dies
during the turn, run exits 125 and the session is crashed: restore it with
'looprig restore ID'. --rig, --placement, --root and --accept-drift apply
to a restore only.

When no host can be made here (the socket directory is unusable, or the
host process ends before it is ready), run says so in one line on stderr
and runs the turn in this process, as --in-process does.

Output: the turn's output goes to stdout line by line, drawn as a terminal
would show it: a \r progress bar prints its last state, colours come out
for your terminal (none when stdout is not a terminal or NO_COLOR is set),
every other escape sequence is dropped. On a terminal, the line being
written shows before it is complete (a prompt such as "name? " while the
turn waits for its answer) and is redrawn in place as it grows; on a pipe
or a file each line is printed once, complete. A turn of a profile with
tty = false keeps its stdout and stderr apart. looprig's own lines (the
closing "turn N exited C in T") go to stderr. With --json, the exact bytes.

Input: when stdin and stdout are a terminal, run is the turn's terminal:
each line you type goes to the turn (^D at the start of a line sends an end
of file), the turn gets your window size, and while the turn's terminal
has echo off (a password prompt) yours does too, and what you type is
journaled only as "hidden input, N bytes". Scripts use 'looprig send'.

Gates: when the turn asks a gate (the shell engine asks before a command
matching the profile's gate_policy, e.g. "rm -rf" or "sudo"), looprig asks
"approve? [y/N]" when stdin is a terminal; otherwise it denies the gate and
says so, and the turn fails (exit 1).

Ctrl-C (SIGINT) or SIGTERM interrupts the turn (SIGTERM to its process
group, SIGKILL after a grace period) and waits for its end (the session
stays live in its host; in process, run then shuts it down cleanly); a
second one exits at once without waiting.

Flags:
  --json            one JSON object per event on stdout:
                    {"seq","type","session","loop_id","at",...payload}, with
                    live OutputDelta events (seq 0) and durable TurnOutput
                    checkpoints; errors as {"error":{...}}
  --detach          do not wait for the turn: make sure the session is live
                    in a host (restoring it in a new background host when
                    none serves it, with the flags below), submit INPUT to
                    it, print the turn's id on stdout (alone: for
                    t=$(looprig run ID --detach -- ...); looprig wait ID
                    --turn "$t"), say on stderr how to follow it ('looprig
                    attach ID'), and exit 0 at once. With --json:
                    {"id","short_id","turn_id","index","pid"} (the host's pid)
  --in-process      run the turn in this process instead of a host: restore the
                    session, run the turn, shut the session down (idle
                    afterwards, no background process left). The session then
                    lives only as long as run: a hangup or a kill of run leaves
                    it crashed. Refused (exit 2) for a session live in a host
  --rig NAME        restore with this profile instead of the recorded one
  --accept-drift    restore even when the profile changed (recorded in the
                    journal as ConfigurationAdopted)
  --placement P, --root DIR   override the profile's placement, as for 'new'

Examples:
  looprig run 1a2b3c4d -- make test
  looprig run 1a2b3c4d --json -- 'for i in 1 2 3; do echo $i; done'
  looprig run --detach 1a2b3c4d -- make test && looprig attach 1a2b3c4d
  looprig run --in-process 1a2b3c4d -- make test    # idle afterwards, no host
`

const helpRestore = `Usage: looprig restore ID [--json] [--accept-drift] [--hold|--detach] [--rig NAME]
                       [--placement P --root DIR]
       looprig restore --all-crashed [--detach] [--json] [--accept-drift]

Restore session ID (a full id or a unique prefix of at least 4 characters):
take its lease at a new epoch, replay its journal, close what a crash left
open (a running turn becomes TurnInterrupted{crash}, an open gate is closed),
print the outcome and shut down cleanly — or, with --detach, leave it live in
a background host.

--all-crashed restores every crashed session (after a reboot), several at
once, printing each outcome as it completes: restored, skipped (another
process restored it first or holds it: two callers at once restore every
session once) or failed (with its kind, cause and remedy as a single
restore prints them). A turn that was running is shown as interrupted;
nothing is run again. --json prints one object per session:
{"id","short_id","outcome","reason"|"error", and restore's fields when
restored}. Exit 3 if any failed.

Exit codes: 0 restored; 3 the restore failed (RestoreError with its kind:
discovery_failed for an unknown id, replay_failed for an unreadable journal,
...; RestoreRejectedError for configuration drift, with the change table);
4 the session is held by another process (kind lease_failed; the error names
the holder and its epoch) or, with --hold, the lease was lost.

Flags:
  --json            print {"id","epoch","interrupted":[turn ids],"gates_closed":
                    [gate ids],"short_id","records","adopted":[changes],"held"};
                    errors as {"error":{...}}
  --hold            keep the session live, holding its lease (others see it
                    "held"), printing its events, until SIGINT or SIGTERM; if
                    another process breaks the lease it prints LEASE LOST and
                    exits 4
  --detach          restore it in a background host ('looprig host') and leave
                    it live there: it outlives this terminal; 'looprig attach ID'
                    follows it, 'looprig stop ID' shuts it down. JSON adds "pid"
                    (the host's) and "detached":true
  --accept-drift    restore even when the profile changed since the session was
                    created (recorded as ConfigurationAdopted)
  --rig NAME        restore with this profile instead of the recorded one
  --placement P, --root DIR   override the profile's placement, as for 'new'

Examples:
  looprig restore 1a2b3c4d
  looprig restore 1a2b3c4d --hold          (Ctrl-C to release it)
  looprig restore 1a2b3c4d --detach        (live in the background)
  looprig restore 1a2b3c4d --json | jq .interrupted
`

const helpLog = `Usage: looprig log ID [--json] [-f|--follow]

Print the journal of session ID, read-only: no lease is taken, so it works
while another process holds the session. One line per record:
"seq  kind  type  summary", with kind fence, event or command; output is
rendered as a terminal would show it (without colours) and shortened, other
text has its control characters made visible. A journal that stops
being readable (a damaged record) prints what is intact, then the error
(exit 1).

Flags:
  --json          one JSON object per record: {"seq","kind","type","epoch"
                  (fences),"at","loop_id"(loop events),...payload}; commands
                  have "type" = the command (submit, interrupt, respond_gate,
                  shutdown) and its fields
  -f, --follow    keep printing records as they land (checks every 200ms)
                  until Ctrl-C

Examples:
  looprig log 1a2b3c4d
  looprig log 1a2b3c4d --json | jq -r 'select(.type == "TurnOutput") | .text'
  looprig log 1a2b3c4d --follow
`

const helpTake = `Usage: looprig take ID [--interrupt] [--timeout D] [--json]

Take session ID over and serve it in a background host on this machine,
from the process that holds it, on this machine or another sharing the
store (a NATS store). take asks the holder through the store; the holder
lets its running turn end (or interrupts it, with --interrupt), takes a
last checkpoint of the workspace, journals HandedOff and shuts down; then
take restores the session here, bringing the workspace back from that
checkpoint when this machine does not have it, and prints how to attach.
At every moment one process owns the session. A session nobody holds is
simply restored here; one a host here serves already is an error saying
so. A holder that does not answer within --timeout (a stopped or wedged
process) is an error naming the lease break that would force it.

Flags:
  --interrupt    interrupt the holder's running turn rather than wait for it
  --timeout D    how long the holder has to hand over (default 2m)
  --json         {"id","short_id","from","pid","epoch"}

Examples:
  looprig --store nats://nats.internal:4222 take 1a2b3c4d
  looprig take 1a2b3c4d --interrupt && looprig attach 1a2b3c4d
`

const helpGC = `Usage: looprig gc [--json]

Delete the blobs of the store that no checkpoint on record references:
those of deleted sessions, and those a checkpoint left when it crashed
before it was journaled. Every checkpoint any session's journal records is
kept, with its files, so looprig diff works for every turn. A blob put in
the last 10 minutes is spared (a checkpoint in progress, on any machine,
may be about to reference it). It reads every journal of the store, and
deletes nothing when one of them or a checkpoint's manifest cannot be
read (that error is printed). looprig rm runs it after it deletes.

Flags:
  --json   {"referenced","deleted","deleted_bytes","recent"}
`

const helpDiff = `Usage: looprig diff ID [--turn N] [--stat] [--json]

Show what a turn changed in session ID's workspace: the difference between
the checkpoint of the workspace before the turn started and the one taken
when it ended (see "Workspaces travel with their sessions" in the README).
Read-only, from the store: it works on any machine that shares it, while
the session is live, idle or crashed. Text files get a unified diff; a
binary or very large file, an added or removed one, a mode change or a
link get one line each. Edits made between the turn before and this one
count as this turn's. A turn that runs, or whose checkpoint was skipped or
never taken (checkpoint = "off" or "stop" in the profile), is an error
that says so.

Flags:
  --turn N       the turn: its number, as ls and the TUI show it (#N), or a
                 prefix of its id (default: the last turn)
  --stat         one line per file: lines added and removed
  --json         {"id","turn_id","turn","before","after","changes":[{"path",
                 "kind","old_mode","new_mode","old_size","new_size","binary",
                 "lines_added","lines_removed","patch","summary"}]}

Examples:
  looprig diff 1a2b3c4d
  looprig diff 1a2b3c4d --turn 3 --stat
`

const helpLease = `Usage: looprig lease break ID [--yes] [--json]

Take the lease of session ID by force from a holder that is wedged (hung,
stopped, or otherwise not releasing it), then release it at once so that the
next 'looprig restore' works. Without --yes it only explains and exits 2.

` + breakConsequences + `

A holder that is merely busy is not wedged: breaking its lease stops its
work. Check 'looprig ls' (the HOLDER column) first.

Flags:
  --yes     really break it
  --json    print {"id","broken","epoch","previous_epoch","previous_holder","fenced"},
            and "turn" (the old holder's turn: where it ran, whether it was
            stopped) and "interrupted" when there are any

Example:
  looprig lease break 1a2b3c4d --yes && looprig restore 1a2b3c4d
`

const helpRm = `Usage: looprig rm ID... --yes [--json]

Delete sessions for good: the journal, the catalog entry and the session's
own workspace directory (<store>/workspaces/<id>, with every file its turns
wrote there). The root of an exclusive or shared placement belongs to you
and is never touched. Without --yes it only says what it would delete and
exits 2.

A session held by any process (live, or held elsewhere: see 'looprig ls')
is refused with exit 4; shut it down first. rm takes the session's lease
while it works, so nothing restores the session meanwhile; if rm is
stopped midway the session stays listed, and rm again finishes the job.

Flags:
  --yes     really delete
  --json    print one {"id","deleted","epoch","journal","catalog","workspace"}
            per session

Examples:
  looprig rm 1a2b3c4d --yes
  looprig ls --json | jq -r '.[] | select(.state == "broken") | .id' | xargs looprig rm --yes
`

const helpDemo = `Usage: looprig demo [--json]

Leave a session that crashed mid-turn in the store, ready to restore. A
helper process (this binary, re-executed) creates a session titled
"demo: crashed mid-turn" with the default profile and runs
  for i in $(seq 60); do echo "line $i"; sleep 1; done
Once two seconds of output are durable in the journal, the helper is killed
with SIGKILL. Takes about 3 seconds. Then:

  looprig ls                   shows it "crashed"
  looprig restore SHORT_ID     restores it: the turn is interrupted (crash),
                               the output recorded before the crash is kept
  looprig log SHORT_ID         shows that output and the restore

Flags:
  --json    print {"id","short_id","title","helper_pid"}

Example:
  looprig demo && looprig ls
`

const helpVersion = `Usage: looprig version [--json]

Print looprig's version and the Go version it was built with.

Example:
  looprig version --json
`

const helpHelp = `Usage: looprig help [COMMAND]

Show the help of looprig or of one command (same as COMMAND --help).

Example:
  looprig help run
`

const helpAttach = `Usage: looprig attach ID [--json]

Follow a live session: one served by a host on this machine (started by
the terminal UI, by 'run', or by 'new' or 'restore' with --detach). Prints
the last records of its journal, then its events as they happen, turn
output included, with nothing missed or repeated between the two. Of a
journal longer than 50 records it replays the last 50: a note on stderr
says which records and turns it does not show ('looprig log ID' shows
them), and when the replay begins inside a turn, that turn's header (its
number and input) comes before its output. Ctrl-C detaches: the session
and its running turn go on. With --json, each event is one line shaped
like 'run --json' lines (no note, no header). Attaching (without --json)
counts as looking at the session: a call for you by its turn (a bell, a
notification; see 'ls') is marked seen, and so is every one that comes
while attached.

Exit codes: 0 detached or the session stopped, 1 not live here (see
'looprig ls': "live" sessions can be attached), 4 the session lost its
lease.
`

const helpStop = `Usage: looprig stop ID [--json]

Shut down a live session: its host journals SessionStopped (after
interrupting a running turn), releases the lease and exits. The session
is then idle and can be restored. Waits for the host to exit (up to 30 s).

JSON: {"id","short_id","pid"} (pid: the host's).
`

const helpHost = `Usage: looprig host ID [--accept-drift] [--rig NAME]
       looprig host --new [--rig NAME] [--title T] [--seed DIR]

Serve a session in this process until it stops: restore ID (or create a
new session) under its lease, then serve it on a unix socket in a private
directory ($XDG_RUNTIME_DIR/looprig/, else /tmp/looprig-UID/, mode 0700)
for 'attach', 'run', 'stop' and the terminal UI. SIGHUP is ignored;
SIGINT and SIGTERM shut the session down. The terminal UI, 'run' and
--detach start hosts in the background (setsid, logging to <socket dir>/ID.log);
run it by hand to debug one. 'looprig ls' shows a hosted session as live
with the host's pid.
`

const helpSend = `Usage: looprig send ID [-n] [--json] -- TEXT...
       looprig send ID --stdin [-n] [--json]
       looprig send ID --eof [--json]

Type TEXT, then Enter, into the terminal of the turn running in a live
session (one served by a host on this machine): the turn reads it as if it
were typed, e.g. the answer to a prompt. -n leaves out the newline; --eof
sends an end of file (^D) instead.

--stdin sends what standard input holds, to its end (within send's 15 s),
instead of TEXT: at most 64 KiB, a newline added unless it ends with one
(or -n). Use it for
secrets: TEXT on the command line can be read by every local user while
send runs (ps, /proc/PID/cmdline), and send warns on standard error when
TEXT went to a terminal with echo off. For a password (printf is the
shell's own, so the password is in no command line):

  read -rs pw && printf '%s\n' "$pw" | looprig send ID --stdin

The input is journaled with "cli" as its sender, and its text once
written — unless the terminal had echo off (a password prompt) when it
arrived or was written: then only "hidden input, N bytes" is journaled,
and nothing of the text is kept. Input the turn did not read in time is
journaled as written only as far as it went in.

Fails when the session is not live here (not_hosted), no turn is running
(no_turn), the turn has no terminal (no_terminal: its profile has
tty = false), or the turn does not read its input within 5 s
(input_timeout).

JSON: {"id","short_id","bytes","eof","hidden"}.
`

const helpWait = `Usage: looprig wait ID [--for turn-end|idle|gate|attention] [--turn TURN] [--timeout D] [--json]

Wait until session ID reaches a state, then print it and exit 0:

  turn-end  (the default) the running turn ends; with no turn running, the
            last turn's end is reported at once (--turn TURN: that turn,
            by id or prefix, e.g. the id 'run --detach' printed); a session
            that has run no turn waits for the next one
  idle      no turn is running
  gate      a gate is open (its question is printed)
  attention the running turn asks for you: its program rang the bell or
            sent a desktop notification (OSC 9, OSC 777), and nobody has
            looked at the session since (at once when that is so already)

It follows the session's host when the session is live here, else its
journal (a session held on another machine sharing the store).

Exit codes: 0 the state was reached; 124 --timeout passed; 5 the session
crashed (its host or holder died) before the state; 6 the session is not
running or was shut down, so the state cannot come; 4 another process took
its lease; 1 and 2 as for every command.

JSON: {"id","short_id","for","turn_id","end","exit_code","error","reason",
"gate_id","prompt","text"} (the fields that apply; end is done, failed or
interrupted; for attention, reason is bell, osc9 or osc777 and text the
notification's). A failure: {"error":{"type":"WaitError","kind":"timeout"|
"crashed"|"stopped"|"lease_lost",...}}.
`
