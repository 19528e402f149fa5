package cli

// The help of the commands that work on a session's turns after they ran:
// what a turn changed (diff), putting the workspace back (revert), and a
// new session from a turn (fork).

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
that says so. The paths the checkpoint left out (secrets such as .env and
private keys, what .gitignore or .looprigignore ignore) are named at the
end, never shown: their content is not in the store.

Flags:
  --turn N       the turn: its number, as ls and the TUI show it (#N), or a
                 prefix of its id (default: the last turn)
  --stat         one line per file: lines added and removed
  --json         {"id","turn_id","turn","before","after","changes":[{"path",
                 "kind","old_mode","new_mode","old_size","new_size","binary",
                 "lines_added","lines_removed","patch","summary"}],
                 "excluded":[paths, a directory ending in "/"]}

Examples:
  looprig diff 1a2b3c4d
  looprig diff 1a2b3c4d --turn 3 --stat
`

const helpRevert = `Usage: looprig revert ID [--turn N] [--json]

Put session ID's workspace back as it was before turn N (default: the last
turn), writing only the files that differ from the checkpoint taken before
it; files a rule leaves out of checkpoints (.env, ignored files) are never
touched. The workspace as it is first is checkpointed (if it is not the
last checkpoint already), so nothing is lost: a revert is journaled
(WorkspaceReverted) and is itself a turn boundary, so a revert can be
reverted: right after one, looprig revert ID (without --turn) undoes it.
The next turn's diff is against the reverted workspace.

The revert runs in the session's host when one serves it here; otherwise
the session is restored in this process, reverted and shut down. A running
turn, or the checkpoint after one, refuses it (BusyError). So does a turn
whose workspace before it is not known exactly (NoCheckpointBeforeError):
the first turn of a session (its first checkpoint is taken when that turn
ends), a profile with checkpoint = "off", a turn after one whose checkpoint
was skipped or not taken (checkpoint = "stop"). What was edited by hand
between the turn before and turn N is checkpointed when turn N starts: it
is not turn N's, and its revert keeps it.

An agent session's conversation (claude, codex) is not rewound by a file
revert: the agent still remembers the turns reverted.

Flags:
  --turn N      the turn's number, as ls, log and the TUI show it (#N)
  --json        {"id","short_id","turn_id","turn","undo","manifest","from",
                "changed","removed","paths","agent","conversation_rewound"}
  --rig, --placement, --root, --accept-drift, --keep-workspace,
  --use-checkpoint   as for restore, when no host serves the session

Examples:
  looprig revert 1a2b3c4d
  looprig revert 1a2b3c4d --turn 3
`

const helpFork = `Usage: looprig fork ID [--turn N] [--title T] [--root DIR] [--detach] [--json]

Create a new session that begins where session ID was after a turn: its
workspace holds the files as the checkpoint taken when that turn ended
(contents, modes, links; what later turns changed is not there), and its
journal records where it came from (ls -l and ls --json "forked_from", the
TUI's detail pane). Fork only reads ID's journal and blobs: it works while
ID is live, idle or crashed, and leaves it as it was. The fork uses the
profile ID was created with.

For an agent session (engine claude), the fork's conversation is a copy of
ID's as it was after that turn, under a new conversation id, as Claude
Code's --fork-session makes one: the fork's first turn continues it, and
ID's conversation goes on unchanged. A Codex conversation cannot be forked
yet: the fork's first turn starts a new one, and fork says so.

A turn without a checkpoint after it (it runs, the profile has checkpoint
= "off" or "stop", its checkpoint was skipped over checkpoint_max) cannot
be forked: the error says why.

The new id goes to stdout; what was forked to stderr.

Flags:
  --turn N       the turn: its number, as ls and the TUI show it (#N), or a
                 prefix of its id (default: the last turn that ended)
  --title T      the fork's title (default: ID's title and " (fork)")
  --root DIR     the fork's workspace is DIR, which must be empty or missing
                 (exclusive placement: one session at a time); default: a new
                 directory in the store, or, for a session in a git worktree,
                 a new worktree beside the repository on a new branch
                 looprig/<short id> made at its branch
  --detach       leave the fork live in a background host
  --json         new's fields and "forked_from":{"session","turn_index",
                 "turn_id","checkpoint","conversation"?}, "files", "bytes",
                 "conversation"?, "conversation_forked",
                 "conversation_fresh"? (why it starts anew)

Examples:
  looprig fork 1a2b3c4d
  looprig fork 1a2b3c4d --turn 3 --title "try the other way"
  looprig fork 1a2b3c4d --turn 2 --root ~/src/other-way
`
