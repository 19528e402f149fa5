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
holder (pid@host) when held, the open turn (or "checkpointing: 7,421 of
10,000 files" while its holder checkpoints the workspace after a turn,
before the next one can start) and the last update. It never
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
                "attention":{"reason","text","since","turn_id","agent"?}|null,
                "checkpoint":{"manifest","files","bytes","at"}|null,
                "conversation":{"agent","id"}|null,
                "checkpointing":{"trigger","turn_id","since","files","files_done",
                 "bytes","bytes_done"}|null,
                "dir","branch"}
               dir: the directory it works in; branch: its git worktree's
               branch (new --worktree), "" for any other directory.
               attention: the running turn asked for you (its program rang the
               bell, reason "bell", or sent a desktop notification, "osc9" or
               "osc777", or an agent asked for you, "agent"; its text is
               "text", for an agent its own words, "agent" naming it) since
               anyone last looked at the
               session (attach, the terminal UI); since: its first unseen call.
               conversation: an agent session's (engine claude or codex)
               conversation id, as the agent's own --resume takes it;
               checkpointing: the checkpoint of the workspace its holder is
               taking (trigger turn, stop or handoff), as it last wrote it
  -l, --long   show full ids instead of the first 8 characters, and add the
               latest checkpoint, the directory and the git worktree's branch

Example:
  looprig ls --json | jq -r '.[] | select(.state == "crashed") | .id'
  looprig ls --json | jq -r '.[] | select(.open_gate != null) | .id'   # waiting at a gate
  looprig ls --json | jq -r '.[] | select(.attention != null) | .id'   # asking for you
`

const helpNew = `Usage: looprig new [--rig NAME] [--title T] [--seed DIR] [--detach]
                   [--scratch | --root DIR | --placement session|exclusive|shared --root DIR]
                   [--worktree [BRANCH]] [--json]

Create a session, print its id on stdout, and shut it down cleanly (state
idle); with --detach, leave it live in a background host instead. Use
'looprig run ID -- INPUT' to run turns in it.

Where it works: in the current directory, as tmux opens a window where you
stand. The directory is the session's exclusive root: while the session is
live no other session may work there (a root lease), and each turn's end
is checkpointed into the store (files ignored by .gitignore and
.looprigignore, and secrets such as .env and keys, left out), so the
session can travel to another machine and back. Every restore puts the
session back in that directory (it is recorded); only a profile that pins
another placement is drift. "/", your home directory itself and the store
are refused: cd into a project directory first, or use --scratch.

A worktree per session: in a git repository, --worktree gives the session
a git worktree of its own on a new branch (BRANCH, default looprig/<short
id>), made with your git (git worktree add -b BRANCH PATH HEAD, from the
commit checked out where new runs) beside the repository, in
<repo>.worktrees/<branch> (/src/app.worktrees/looprig/1a2b3c4d for
/src/app). The worktree is the session's exclusive root, so a second
session in a busy repository runs beside the first; the refusal of a
second session in a git work tree says so. 'looprig rm' removes the
worktree and its branch when they hold nothing uncommitted (git status)
and no commit that is on no other branch or remote-tracking branch, and
otherwise keeps them and says what it keeps.

Flags:
  --rig NAME         the profile (default: default_profile of the configuration,
                     else "default"; built in: "default" runs turns in your shell,
                     "demo" runs the demo engine in a scratch directory)
  --title T          the session's title
  --scratch          a private, empty directory in the store instead of the
                     current directory
  --root DIR         work in DIR instead of the current directory
  --worktree [BRANCH]
                     work in a new git worktree of the repository the directory
                     is in, on the new branch BRANCH (default looprig/<short id>;
                     also --worktree=BRANCH); not with --scratch or --seed
  --placement P      where the workspace is: session (as --scratch), exclusive (DIR,
                     one session at a time) or shared (DIR, no lease, never
                     checkpointed); exclusive and shared need --root
  --seed DIR         copy DIR into the new, empty workspace first (not with shared
                     placement; symlinks leaving DIR and special files refuse it)
  --detach           keep the session live in a background host ('looprig host'),
                     which outlives this terminal; 'looprig stop ID' shuts it down
  --json             print {"id","epoch","short_id","title","profile","shell","workspace"}
                     (with --worktree also "branch"; with --detach also "pid", the
                     host's, and "detached":true)

A profile whose configuration names a placement (placement = ...) places
every session it creates there, unless a flag above says otherwise.

The shell: a turn runs as SHELL -c INPUT, SHELL being the profile's shell
(key shell in the configuration file, an absolute path), else $SHELL when
it is the absolute path of an executable file, else /bin/sh. new prints the
shell it chose, and the session records and keeps it: a restore by a
process with another $SHELL (a cron job's /bin/sh) still runs its turns in
the recorded shell; a profile whose shell key names another changes it, as
drift, adopted and journaled. Each turn is a fresh 'SHELL -c': it reads what
a non-interactive shell reads ($ENV for sh, $BASH_ENV for bash; not
.bashrc), so aliases are not there, and a cd or an export does not carry
over to the next turn (write 'cd sub && make'). A profile with
shell_interactive = true runs 'SHELL -i -c INPUT', which reads ~/.bashrc or
~/.zshrc: your aliases and functions work.

Examples:
  cd ~/src/myproject && id=$(looprig new --title "nightly build")
  looprig run "$id" -- make test
  looprig new --scratch --rig demo --json
`

// helpWorkspaceOptions are the options of run and restore about the
// workspace a restore brings back.
const helpWorkspaceOptions = `  --placement P, --root DIR   override the placement the session recorded (a
                    session is restored where it was created): --root DIR
                    alone moves a session that works in a directory to DIR,
                    its files brought from its checkpoint (accepted without
                    --accept-drift; a DIR holding other files is refused)
  --keep-workspace  if the workspace directory here has changes no checkpoint
                    has while the session moved on elsewhere (a restore
                    refuses it: workspace_diverged), keep it as the session's
                    workspace (journaled as an adoption, checkpointed at once)
  --use-checkpoint  in that case, move the directory aside to
                    DIR.diverged-TIME (never deleted) and bring the last
                    checkpoint back
`

const helpRun = `Usage: looprig run ID [--json] [--detach|--in-process] [--rig NAME] [--accept-drift]
                   [--placement P --root DIR] [--keep-workspace|--use-checkpoint] -- INPUT...

Run INPUT (the words after "--" joined with spaces) as one turn of session
ID (a full id or a unique prefix of at least 4 characters), stream its
output until the turn ends, and exit with the turn's exit code, as
'docker run' does: a command killed by signal N exits 128+N, an
interrupted turn 130, a failed turn (or one denied at a gate) 1. When
looprig itself fails (restore refused, lease held, session busy, store
unreadable) it exits 125 and prints the error; usage errors exit 2.
Standard input: on a terminal, run is the turn's terminal (lines typed go
to the turn, ^D at the start of a line is an end of file); otherwise (a
script, a pipe, a file, /dev/null) the turn gets it, then an end of file,
as 'ssh host cmd' does: a command that asks a question reads the script's
answer instead of waiting; a pipe that gives nothing while the turn prints
nothing for 5 s is said on stderr, with the send that answers it. A gate is only answered at a terminal.

INPUT runs as SHELL -c INPUT in the shell the session recorded when it was
created (the profile's shell, else the $SHELL of 'new', else /bin/sh); a
restore never switches it to this process's $SHELL ('looprig new --help').
In a session whose profile runs an agent's own interface (agent_interactive
= true), INPUT is the agent's first prompt, and may be left out: 'looprig
run ID' opens the interface with an empty prompt box.

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
running another turn refuses it (exit 125, "busy"). A session whose host
checkpoints the workspace after the last turn (of a big workspace, this
takes a while) queues the turn until the checkpoint is over, and run says
so on stderr: "looprig: waiting for the checkpoint of the last turn:
7,421 of 10,000 files…" (redrawn on a terminal, once on a pipe); it gives
up only on a host that says nothing for 45 s. A restore that brings the
workspace back from its checkpoint draws its progress on a terminal, as
'looprig restore' does. If the host dies
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
A full-screen program (less, vim, htop, Claude Code's interface) shows
its screen on your terminal's alternate screen, as in tmux, and takes
every key as typed: Enter is \r and submits, Ctrl-C and Ctrl-] go to the
program (to leave it running, 'looprig attach ID', whose Ctrl-] detaches).
Only its text and colours reach your terminal (no title, hyperlink,
clipboard). When it leaves its screen or the turn ends, your terminal is
back on its main screen in line mode.

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
` + helpWorkspaceOptions + `
Examples:
  looprig run 1a2b3c4d -- make test
  looprig run 1a2b3c4d --json -- 'for i in 1 2 3; do echo $i; done'
  looprig run --detach 1a2b3c4d -- make test && looprig attach 1a2b3c4d
  looprig run --in-process 1a2b3c4d -- make test    # idle afterwards, no host
`

const helpRestore = `Usage: looprig restore ID [--json] [--accept-drift] [--hold|--detach] [--rig NAME]
                       [--placement P --root DIR] [--keep-workspace|--use-checkpoint]
       looprig restore --all-crashed [--detach] [--json] [--accept-drift]

Restore session ID (a full id or a unique prefix of at least 4 characters):
take its lease at a new epoch, replay its journal, close what a crash left
open (a running turn becomes TurnInterrupted{crash}, an open gate is closed),
print the outcome and shut down cleanly — or, with --detach, leave it live in
a background host.

The workspace: a missing workspace directory is brought back from the
last checkpoint. One that exists is compared with it and never rolled
back: when it is the last checkpoint it is used; when it is an older
checkpoint of the session with no changes of its own (the session moved
on on another machine) it is brought up to date, writing only what
differs; when it holds changes made here after the last checkpoint they
are kept and named; anything else (changes no checkpoint has, while the
session moved on elsewhere) is refused before anything is written
(workspace_diverged, naming the paths and both checkpoints): choose with
--keep-workspace or --use-checkpoint. restore (run, take) says which.

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
                    (the host's) and "detached":true. The host's progress in
                    bringing the workspace back from its checkpoint is drawn
                    here, on a terminal, as without --detach
  --accept-drift    restore even when the profile changed since the session was
                    created (recorded as ConfigurationAdopted)
  --rig NAME        restore with this profile instead of the recorded one
` + helpWorkspaceOptions + `
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

const helpSearch = `Usage: looprig search [FLAGS] QUERY...
       looprig search --reindex
       looprig search --update [--session ID]

Find lines of every session of the store: the commands its turns ran (and
input typed into them with echo on; hidden input, a password, is never
journaled, so never found), each line of their output as a terminal shows
it (colours and other escape sequences gone, a line redrawn with carriage
returns in its last state), gate prompts and answers, and agent exchanges
(the prompt, the agent's reply, its notifications).

QUERY is words, which must all appear in a line, in any case (each may be
part of a word); "a phrase" in quotes, which must appear as it is (in any
case); or /REGEXP/, a Go regular expression matched against each line
(case-sensitive unless it begins with (?i)).

One hit per line: the session's short id and title, the turn (#N), the
time, the kind and the line, the matched text highlighted on a terminal
(not with NO_COLOR). A line that lies outside any turn shows "-".

The index is derived from the journals and private: a file in "search"
beside the store (mode 0600, directory 0700; for a NATS store, this
machine's directory of it; for a store you cannot write, your cache
directory). Each search first reads what journals gained
since the last one, so a line a running turn printed a second ago is
found; deleted sessions drop out. A session's host also indexes what
each turn printed once the turn has ended (looprig search --update
--session ID, in a process of its own), so a search after a long turn
need not. A damaged or deleted index is rebuilt, with a note on stderr.
Another process holding the index makes this one wait up to 3 s, then
fail saying so.

Flags:
  --session ID    this session only (an id or a unique prefix)
  --since D       lines from D ago on (2d, 3h, 30m, 1w) or since a date (2026-01-31)
  --kind K        command, output, gate or agent (several: comma-separated)
  --engine E      sessions whose engine is E (shell, claude, codex, demo, ...)
  --state S       sessions in state S (live, held, idle, crashed, broken)
  -C N            also N lines of the same turn before and after each hit
                  (within the index's block of 512 lines), groups between "--"
  --reindex       rebuild the index from the journals first (alone: rebuild only)
  --update        bring the index up to date and search nothing (with --session,
                  with that session's journal only, and wait at most 1 s for it)
  --json          one JSON object per hit: {"session","short_id","title","turn",
                  "kind","at","text","match":[[start,end]...]} (byte offsets in
                  text), with -C also "before" and "after" (texts)

Exit codes, as grep's: 0 a line matched, 1 none did (or the store has no
sessions), 2 an error (a query that does not parse says at which column).

Examples:
  looprig search EADDRINUSE
  looprig search '"connection refused"' --since 2d
  looprig search '/retry(ing)? in \d+s/' --kind output -C 2
  looprig search migration --engine claude --json | jq -r .text
`

const helpTake = `Usage: looprig take ID [--interrupt] [--timeout D] [--without-workspace]
                    [--accept-drift] [--rig NAME] [--placement P --root DIR]
                    [--keep-workspace|--use-checkpoint] [--json]

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
process, or a turn that runs on) is HandOffTimeoutError (exit 4) naming
the lease break that would force it; a holder checkpointing the
workspace answers (take says it waits for the checkpoint, with how far it
is, and the timeout runs from its last progress). The restore here draws
its progress on a terminal.

take's request is withdrawn whenever take gives up (its timeout, ^C), and
take renews it while it waits: the holder calls the hand-over off when
the request is gone (or no longer renewed: its take died), so a take that
gave up never shuts the session down later. Once the holder has agreed
(it journals HandedOff next), the request can no longer be withdrawn and
take waits for it. With a shared store, a holder that is stopped or cut
off does not answer, and its lease expires: take then restores the
session all the same, and says so: no hand-over and no final checkpoint
happened, the workspace is the session's last checkpoint, and the turn it
ran is recorded as crashed (--json: "handed_over": false). The journal
names who asked (HandedOff's "to": this take) and the new holder
(RestoreDone's "holder": the host here); an --interrupt is recorded as
TurnInterrupted{handoff}.

A session whose holder does not checkpoint its workspace (its profile's
checkpoint = "off", the default of exclusive placement, or a shared
workspace) would come without its files: take refuses it before the
holder is asked (HandOffWithoutWorkspaceError, exit 1), unless
--without-workspace says to take it anyway.

take is all or nothing: before the holder is asked, take makes here the
checks a restore makes (the configuration against the session's record,
the placement and its root, the workspace directory against the last
checkpoint), with the restore flags given, and refuses as restore would
(drift, a root another session holds, a diverged workspace), the session
staying where it is served. What the holder does after that check (its
last checkpoint) may still make the restore here fail: take then says that
nobody serves the session and how to serve it again, and 'looprig ls'
shows the failure beside the session until a restore succeeds.

Flags:
  --interrupt          interrupt the holder's running turn rather than wait for it
  --timeout D          how long the holder has to hand over (default 2m)
  --without-workspace  take a session whose holder does not checkpoint its
                       workspace: its files stay behind, and take says where
                       its turns run here
  --accept-drift       restore here even when the profile changed since the
                       session was recorded (as for restore)
  --rig NAME           restore here with this profile instead of the recorded one
  --placement P, --root DIR   override the profile's placement, as for 'new'
  --keep-workspace     if the workspace directory here has changes no
                       checkpoint has, keep it (journaled as an adoption)
  --use-checkpoint     if it has, move it aside (never deleted) and bring the
                       last checkpoint back
  --json               {"id","short_id","from","pid","epoch","workspace",
                       "without_workspace","dir","handed_over","previous"}

Examples:
  looprig --store nats://nats.internal:4222 take 1a2b3c4d
  looprig take 1a2b3c4d --interrupt && looprig attach 1a2b3c4d
`

const helpGC = `Usage: looprig gc [--json]

Delete the blobs of the store that no checkpoint on record references:
those of deleted sessions, and those a checkpoint left when it crashed
before it was journaled. Every checkpoint any session's journal records is
kept, with its files, so looprig diff works for every turn; so is what a
checkpoint index on this machine names. A blob put or renewed in the last
10 minutes is spared (a checkpoint in progress, on any machine, may be
about to reference it). It reads every journal of the store, and deletes
nothing when one of them or a checkpoint's manifest cannot be read (that
error is printed). looprig rm deletes a session's own blobs at once.

Flags:
  --json   {"referenced","deleted","deleted_bytes","recent"}
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
and is never touched, but for a git worktree made by new --worktree: rm
removes it (git worktree remove) and its branch (git branch -D) when they
hold nothing uncommitted (git status --porcelain: changed, staged or
untracked files; ignored ones go with it) and no commit on no other branch
or remote-tracking branch; otherwise it keeps both and says what it keeps
and why. Without --yes it only says what it would delete and exits 2.

A session held by any process (live, or held elsewhere: see 'looprig ls')
is refused with exit 4; shut it down first. rm takes the session's lease
while it works, so nothing restores the session meanwhile; if rm is
stopped midway the session stays listed, and rm again finishes the job.

The blobs of the session's checkpoints and agent transcript go at once,
but those another session's checkpoints reference too, and those put
again since its last checkpoint (another session's checkpoint in progress
may use them; 'looprig gc' deletes them after 10 minutes if nothing does):
rm says what it kept and why. A workspace directory moved aside by
--use-checkpoint (DIR.diverged-TIME) is yours and stays.

Flags:
  --yes     really delete
  --json    print one {"id","deleted","epoch","journal","catalog","workspace",
            "blobs_deleted","blobs_deleted_bytes","blobs_shared","blobs_renewed",
            "worktree":{"path","branch","repo","removed","kept"?}|null} per session

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
with SIGKILL. Takes about 3 seconds. Then (demo prints these commands with
this binary's path instead of looprig when the PATH does not find it, as
for a ./looprig built in a checkout):

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

Attach to a live session (served by a host on this machine): print the
last records of its journal, then its events as they happen, turn output
included, nothing missed or repeated. Of a journal longer than 62 records
it replays the last 50, saying on stderr what it does not show ('looprig
log ID' does), with the header of the turn the replay begins inside.

In a terminal, attach is the session's terminal: the output's line shows
before it is complete; each line typed goes to the running turn (^D at a
line's start: end of file), your echo following the turn's (off at a
password prompt: journaled as hidden), the turn's window size yours; a
gate asks approve? [y/N]. Between turns the prompt 'looprig ID › ' takes
a line that starts a turn. Ctrl-] detaches (the session goes on); Ctrl-C
interrupts the running turn, and at the prompt detaches, as ^D does.
Other clients see the turn's echo of what you type. A full-screen
program (less, vim, Claude Code's interface) shows its screen on your
terminal's alternate screen, and takes every key as typed (Enter is \r,
Ctrl-C goes to it); Ctrl-] still detaches. Attached in the middle of its
screen, attach makes it redraw. Your terminal is back in line mode on its
main screen when the program leaves its screen, the turn ends or attach
exits.

With --json, or off a terminal, attach only follows (--json: one event a
line, as 'run --json'), and Ctrl-C detaches. Attached (without --json),
the turn's calls for you (see 'ls') are marked seen as they come.

Exit codes: 0 detached or session stopped, 1 not live here (see 'ls')
or its host lost (restore it), 4 the session lost its lease.
`

const helpStop = `Usage: looprig stop ID [--json]

Shut down a live session: its host journals SessionStopped (after
interrupting a running turn), releases the lease and exits. The session
is then idle and can be restored. A checkpoint of the workspace in
progress (after the last turn, or the shutdown's own) is waited for, and
stop says so on stderr with how far it is ("looprig: waiting for the
checkpoint of the last turn: 7,421 of 10,000 files…"). A host says it is
alive every quarter of a second while it shuts down; one that says nothing
for 9 s (the shutdown grace, 8 s, and a second: not even its hello) is
stopped (SIGSTOP, ^Z) or wedged: stop gives up with HostUnresponsiveError
(exit 4), whose hint is 'kill -CONT PID' or 'looprig lease break ID --yes'.
Waits for the host to exit (up to 30 s).

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

A program that prints its prompt before it turns echo off (echo
"Password:"; read -s) leaves a moment in which what is sent is echoed.
When the turn's last output line looks like a password prompt (it names a
password, passphrase, PIN, token or key and ends like a prompt) while its
terminal still echoes, the host waits up to 0.5 s for the echo to go off
before it writes the text, and send warns on standard error: that the
text went in hidden after the wait, or that it was echoed (into the turn's
output and journal). Prompt with echo already off (read -rsp 'Password: '
VAR; getpass, sudo and ssh do) and neither happens.

Fails when the session is not live here (not_hosted), no turn is running
(no_turn), send runs inside one of the session's own turns (from_turn:
only a person types into a turn; the attempt is journaled), the turn has
no terminal (no_terminal: its profile has tty = false), or the turn does
not read its input within 5 s (input_timeout).

JSON: {"id","short_id","bytes","eof","hidden","prompt_echo"} (prompt_echo:
the prompt above was met with echo on).
`

const helpWait = `Usage: looprig wait ID [--for turn-end|idle|gate|attention] [--turn TURN] [--timeout D] [--json]

Wait until session ID reaches a state, then print it and exit 0 (for a
turn's end: with the turn's outcome, as run exits with it):

  turn-end  (the default) the running turn ends; with no turn running, the
            last turn's end is reported at once (--turn TURN: that turn,
            by id or prefix, e.g. the id 'run --detach' printed); a session
            that has run no turn waits for the next one
  idle      no turn is running, and the checkpoint of the workspace that
            follows a turn's end is over (the next turn would start at once)
  gate      a gate is open (its question is printed)
  attention the running turn asks for you: its program rang the bell or
            sent a desktop notification (OSC 9, OSC 777), or its agent
            asked (printed as the agent's words: claude says: ...), and
            nobody has looked at the session since (at once when that is
            so already)

It follows the session's host when the session is live here, else its
journal (a session held on another machine sharing the store).

Exit codes: 0 the state was reached; for turn-end, the turn's outcome as
run exits with it: its exit code (128+N for a command killed by signal N),
130 interrupted, 1 failed or denied at a gate (with --json, "end" tells a
turn's code from wait's own below); 124 --timeout passed; 5 the session
crashed (its host or holder died) before the state; 6 the session is not
running or was shut down, so the state cannot come; 4 another process took
its lease; 1 and 2 as for every command.

JSON: {"id","short_id","for","turn_id","end","exit_code","error","reason",
"gate_id","prompt","text","agent"} (the fields that apply; end is done,
failed or interrupted; for attention, reason is bell, osc9, osc777 or
agent and text the notification's: for agent the agent's own words, agent
naming it). A failure: {"error":{"type":"WaitError","kind":"timeout"|
"crashed"|"stopped"|"lease_lost",...}}.
`
