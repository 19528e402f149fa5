package engine

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"looprig/internal/testexec"
)

// bashCase is one Bash command line under some Bash(…) patterns, and
// whether it runs without a gate.
type bashCase struct {
	rules   []string // the arguments of Bash(…) rules; nil: gitStatus
	command string
	allowed bool
}

var gitStatus = []string{"git status:*"}

// bashCases: every form of getting a second command past a rule, and the
// forms an allowed line keeps to. PWNED stands for what the agent should
// not get to run without a gate.
var bashCases = []bashCase{
	// What the rule is for.
	{nil, "git status", true},
	{nil, "git status --short", true},
	{nil, "git  status   -s", true},
	{nil, "'git' status", true},
	{nil, `"git" "status"`, true},
	{nil, "git status; git status -s", true},
	{nil, "git status && git status -s || git status", true},
	{nil, "git status\ngit status -s", true},
	{nil, "git status;", true},
	{nil, "git status # ; touch PWNED", true}, // a comment: the shell runs git status only
	{nil, "git status -- \"$HOME\" ${USER}", true},
	{nil, "git status 2>&1", true},
	{nil, "git status >/dev/null 2>&1", true},
	{nil, "git status &>/dev/null", true},
	{nil, "git status < README.md", true},
	{nil, "git status <<EOF\nhello $USER\nEOF", true},
	{nil, "git status <<< \"$HOME\"", true},
	// Here-documents end where bash ends them (the fuzz oracle checks):
	// each `touch PWNED` below is text, not a command.
	{nil, "git status <<E\nE \ntouch PWNED\nE", true},
	{nil, "git status <<-E\n  E\ntouch PWNED\nE", true},
	{nil, "git status <<E <<F\nE\ntouch PWNED\nF", true},
	{nil, "git status <<E\n\\E\ntouch PWNED\nE", true},
	{nil, "git status <<-E\n\t\tE\ntouch PWNED", false},
	{nil, "git status <<E; git status\nE\ntouch PWNED", false},
	{nil, "git status <<E\nhi\\\nE\ntouch PWNED", false}, // unclosed
	// A line continuation anywhere in a line with a here-document is gated:
	// bash joins continued body lines before it compares them with the
	// delimiter, the parser not always.
	{nil, "git status <<E\nE\\\n\nE", false}, // bash ends the body at E\ and an empty line: E runs
	{nil, "git status <<E\nE\\\ntouch PWNED\nE", false},
	{nil, "git status \\\n  -s <<E\nhi\nE", false},
	{nil, "git status \\\n  -s <<< hi", true},
	{nil, `git status "a\"b" 'c d'`, true},
	{[]string{"git status:*", "head *"}, "git status | head -5", true},
	{[]string{"git status:*", "head *"}, "git status |& head -5", true},

	// A second command after the allowed one.
	{nil, "git status; touch PWNED", false},
	{nil, "git status && touch PWNED", false},
	{nil, "git status || touch PWNED", false},
	{nil, "git status | touch PWNED", false},
	{nil, "git status |& touch PWNED", false},
	{nil, "git status\ntouch PWNED", false},
	{nil, "git status\r\ntouch PWNED", false},
	{nil, "git status\r", false},      // bash passes git "status\r"
	{nil, "git status\x1b[2J", false}, // a control character
	{nil, "git status & touch PWNED", false},
	{nil, "git status &", false},
	{nil, "git status # x\ntouch PWNED", false},

	// Substitutions, even quoted.
	{nil, "git status $(touch PWNED)", false},
	{nil, `git status "$(touch PWNED)"`, false},
	{nil, "git status `touch PWNED`", false},
	{nil, "git status \"`touch PWNED`\"", false},
	{nil, "git status $\\\n(touch PWNED)", false},
	{nil, "git status <(touch PWNED)", false},
	{nil, "git status >(touch PWNED)", false},
	{nil, "git status =(touch PWNED)", false}, // zsh's process substitution
	{nil, "git status <<EOF\n$(touch PWNED)\nEOF", false},
	{nil, "git status $((1))", false},
	{nil, "git status $[1]", false},
	{[]string{"echo *"}, "echo '$(touch PWNED)'", false},

	// Expansions that are not plain.
	{nil, "git status ${X:-$(touch PWNED)}", false},
	{nil, "git status ${X:=PWNED}", false},
	{nil, "git status ${!X}", false},
	{nil, "git status ${#X}", false},
	{nil, "git status ${X/a/b}", false},
	{nil, "git status $X[1]", false},               // zsh subscript (arithmetic)
	{nil, "0 $A[0[$.", false},                      // zsh: an unfinished subscript (its end lies past the line)
	{nil, "git status ${(e)X}", false},             // zsh's flag that evaluates
	{nil, "git status *(e:'touch PWNED':)", false}, // zsh glob qualifier: runs code
	{nil, "git status x(e:'touch PWNED':)", false}, // likewise
	{nil, "git status $'\\x3btouch PWNED'", false}, // $'…'
	{nil, `git status $"x"`, false},                // $"…"
	{nil, "git status <<EOF\n${X:-x}\nEOF", false}, // in a here-document
	{nil, "git status <<EOF\n$[X]\nEOF", false},
	{nil, "git status <<< ${X:-$HOME}", false}, // in a here-string

	// Builtins that run text, or change the shell for the next command,
	// whatever rule matches them.
	{[]string{"git status:*", "eval *"}, "eval 'touch PWNED'", false},
	{nil, "git status; eval 'touch PWNED'", false},
	{[]string{"source *", ". *"}, "source ./x.sh", false},
	{[]string{". *"}, ". ./x.sh", false},
	{nil, "exec git status", false},
	{nil, "command git status", false},
	{nil, "builtin eval x", false},
	{nil, "noglob eval 'touch PWNED'", false},
	{[]string{"cd *", "git status:*"}, "cd /elsewhere && git status", false},
	{[]string{"export *", "git status:*"}, "export PATH=.; git status", false},
	{[]string{"alias *", "git status:*"}, "alias git=touch; git status", false},
	{[]string{"printf *", "git status:*"}, "printf -v PATH %s .; git status", false},
	{[]string{"trap *"}, "trap 'touch PWNED' EXIT", false},
	{[]string{"* --version"}, "eval 'touch PWNED;' --version", false},

	// Assignments.
	{nil, "X=1; git status", false},
	{nil, "FOO=1 git status", false},
	{nil, "PATH=. git status", false},
	{nil, "GIT_PAGER='touch PWNED' git status", false},
	{[]string{"LANG=C git status:*"}, "LANG=C git status", true}, // a rule that says so
	{nil, "a[$X]=1 git status", false},
	{nil, "git status; declare X=1", false},

	// Compound commands.
	{nil, "(git status)", false},
	{nil, "{ git status; }", false},
	{nil, "git status; f() { touch PWNED; }", false},
	{nil, "if git status; then touch PWNED; fi", false},
	{nil, "for i in 1; do git status; done", false},
	{nil, "while git status; do :; done", false},
	{nil, "case x in x) git status;; esac", false},
	{nil, "[[ -n x ]] && git status", false},
	{nil, "((1)) && git status", false},
	{nil, "let x=1; git status", false},
	{nil, "time git status", false},
	{nil, "! git status", false},
	{nil, "coproc git status", false},

	// Redirections that write, or read from a device.
	{nil, "git status > /etc/passwd", false},
	{nil, "git status >> ../outside", false},
	{nil, "git status > out.txt", false},
	{nil, "git status 2> /etc/x", false},
	{nil, "git status &> /tmp/x", false},
	{nil, "git status >| x", false},
	{nil, "git status >& x", false},
	{nil, "git status 3<> x", false},
	{nil, "git status > \"$HOME/x\"", false},
	{nil, "git status < /dev/tcp/evil.example/80", false},
	{nil, "git status < //dev/./tcp/evil.example/80", false},
	{nil, "git status < $X", false},
	{nil, "{fd}>/dev/null git status", false},
	{nil, "> x", false},
	{nil, "< README.md", false},
	{nil, "git status; < README.md", false}, // zsh runs $READNULLCMD (a pager) for it
	{nil, "git status <& x", false},

	// Commands that run other commands: the rule decides.
	{nil, "bash -c 'git status; touch PWNED'", false},
	{nil, "sh -c 'touch PWNED'", false},
	{nil, "git status | xargs touch", false},
	{nil, "find . -exec touch PWNED \\;", false},
	{nil, "env git status", false},
	{nil, "sudo git status", false},
	{nil, "timeout 5 git status", false},
	{nil, "nice git status", false},
	// … and a rule for one allows whatever it runs: `Bash(find *)` says
	// any find, -exec included; `*` first says any program.
	{[]string{"find *"}, "find . -exec touch PWNED \\;", true},
	{[]string{"* --version"}, "go --version", true},
	{[]string{"* --version"}, "bash -c 'touch PWNED' --version", true},
	{[]string{"* --version"}, "{eval,'touch PWNED;'} --version", false}, // brace expansion makes it eval
	{[]string{"* --version"}, "$X --version", false},
	{[]string{"* --version"}, "ev* 'touch PWNED;' --version", false},

	// A suffix after the prefix, and quoting tricks.
	{nil, "git statusX", false},
	{nil, "git statusX; touch PWNED", false},
	{nil, "git status-x", false},
	{nil, `git status\;touch PWNED`, false},
	{nil, "git 'status;' touch PWNED", false},
	{nil, "git 'status -s'", false}, // one word: git gets "status -s"
	{nil, "'git status'", false},
	{nil, "\"git status\" -s", false},
	{nil, "git\\ status", false},
	{nil, "g'it' status", true}, // quote removal: it is git status
	{nil, "gi\\t status", true},
	{nil, "g* status", false},
	{nil, "gi? status", false},
	{nil, "{git,touch} status", false},
	{nil, "$X status", false},
	{nil, "\"$X\" status", false},
	{nil, "~/bin/git status", false},
	{nil, "=git status", false},

	// Lookalikes and invisible characters.
	{nil, "gіt status", false},             // Cyrillic і
	{nil, "git stаtus", false},             // Cyrillic а
	{nil, "git status；touch PWNED", false}, // fullwidth semicolon: one word
	{nil, "git status\u200b; touch PWNED", false},
	{nil, "git\u00a0status", false},             // no-break space: one word
	{nil, "git status\u2028touch PWNED", false}, // line separator: one word

	// What does not parse, or is nothing.
	{nil, "git status '", false},
	{nil, "git status )", false},
	{nil, "", false},
	{nil, "# only a comment", false},
	{nil, "git status " + strings.Repeat("(", 100), false},
	{nil, "git status " + strings.Repeat("x", maxBashAllowed), false},
}

func TestBashAllowed(t *testing.T) {
	var table strings.Builder
	for _, c := range bashCases {
		rules := c.rules
		if rules == nil {
			rules = gitStatus
		}
		got, why := bashAllowed(rules, c.command)
		if got != c.allowed {
			t.Errorf("%q under %q: allowed %v (%s), want %v", c.command, rules, got, why, c.allowed)
		}
		verdict := "allowed"
		if !got {
			verdict = "gated: " + why
		}
		shown := c.command
		if len(shown) > 60 {
			shown = shown[:57] + "..."
		}
		table.WriteString(strings.Join([]string{quoteCell(shown), "`" + strings.Join(rules, "`, `") + "`", verdict}, " | ") + "\n")
	}
	if testing.Verbose() {
		t.Logf("command | rules | outcome\n%s", table.String())
	}
}

func quoteCell(s string) string { return strconv.Quote(s) }

func TestBashPatternMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, text string
		want          bool
	}{
		{"git status", "git status", true},
		{"git status", "git status -s", false},
		{"git status *", "git status", true},
		{"git status *", "git status -s", true},
		{"git status *", "git statusX", false},
		{"git status *", "git status-x", false},
		{"git status:*", "git status", true},
		{"git status:*", "git status -s", true},
		{"git status:*", "git statusX", false},
		{"git status*", "git statusX", true}, // no space: any characters
		{"git status*", "git status -s", true},
		{"git status*", "git status", true},
		{"ls *", "lsof", false},
		{"ls*", "lsof", true},
		{"git * main", "git push origin main", true},
		{"git * main", "git main", false},
		{"* --version", "go --version", true},
		{"* --version", "go version", false},
		{"echo \\*", "echo *", true},
		{"echo \\*", "echo x", false},
		{"echo \\\\", "echo \\", true},
		{"npm run test *", "npm run test:unit", false},
		{"npm run test*", "npm run test:unit", true},
		{"  git status  ", "git status", true},
		{"*", "anything at all", true},
		{"a*b*c", "abc", true},
		{"a*b*c", "ac", false},
		{"a*a", "a", false},
		{"a*x*x*c", "axc", false},
		{"a*x*x*c", "axxc", true},
	} {
		if got := bashPatternMatch(c.pattern, c.text); got != c.want {
			t.Errorf("bashPatternMatch(%q, %q) = %v", c.pattern, c.text, got)
		}
	}
}

func toolInput(t *testing.T, fields map[string]any) json.RawMessage {
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestToolAllowed(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "nowhere"), filepath.Join(ws, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	allow := []string{"Read", "Bash(git status:*)", "mcp__*", "Edit(" + ws + "/*)", "Edit(src/*)", "WebFetch(https://docs.example/*)", "Grep(" + ws + "/*)"}
	for _, c := range []struct {
		tool  string
		input map[string]any
		want  bool
	}{
		{"Read", map[string]any{"file_path": "/etc/passwd"}, true},
		{"Bash", map[string]any{"command": "git status --short"}, true},
		{"Bash", map[string]any{"command": "git push"}, false},
		{"Bash", map[string]any{"command": "rm -rf /; git status"}, false},
		{"Bash", map[string]any{"command": "git status; touch PWNED"}, false},
		{"Bash", map[string]any{}, false},
		{"mcp__x__y", nil, true},
		{"Write", map[string]any{"file_path": ws + "/a"}, false},
		{"Edit", map[string]any{"file_path": ws + "/a"}, true},
		{"Edit", map[string]any{"file_path": ws + "/sub/new/deeper.go"}, true},
		{"Edit", map[string]any{"file_path": ws + "/../" + filepath.Base(outside) + "/a"}, false},
		{"Edit", map[string]any{"file_path": ws + "/sub/../../x"}, false},
		{"Edit", map[string]any{"file_path": ws + "/link/a"}, false},   // a link out of the workspace
		{"Edit", map[string]any{"file_path": ws + "/dangling"}, false}, // a write would follow it out
		{"Edit", map[string]any{"file_path": ws + "/./sub/./a"}, true}, // "." resolved
		{"Edit", map[string]any{"file_path": "sub/../../x"}, false},
		{"Edit", map[string]any{"file_path": "src/a"}, true},
		{"Edit", map[string]any{"file_path": "src/../../etc/passwd"}, false},
		{"WebFetch", map[string]any{"url": "https://docs.example/a"}, true},
		{"WebFetch", map[string]any{"url": "https://docs.example.evil/a"}, false},
		{"Grep", map[string]any{"pattern": ws + "/x"}, false}, // no path: its regex is not one
		{"Grep", map[string]any{"pattern": "x", "path": ws + "/sub"}, true},
		{"Grep", map[string]any{"pattern": "x", "path": "/etc"}, false},
	} {
		got := toolAllowed(allow, c.tool, toolInput(t, c.input))
		if got != c.want {
			t.Errorf("toolAllowed(%s, %v) = %v", c.tool, c.input, got)
		}
	}
	// The tool's name alone, or Bash(*), allows every call: unchecked.
	for _, rule := range []string{"Bash", "Bash(*)", "*", "Bash( * )"} {
		if !toolAllowed([]string{rule}, "Bash", toolInput(t, map[string]any{"command": "git status; touch $(echo PWNED) &"})) {
			t.Errorf("%s does not allow every command", rule)
		}
	}
	if toolAllowed([]string{"Bash(git status*"}, "Bash", toolInput(t, map[string]any{"command": "git status"})) {
		t.Error("a rule without its closing parenthesis allows")
	}
}

// FuzzBashAllowed: whatever the line, bashAllowed does not panic (nor
// recover from one: checkFailed), never
// allows one holding `$(` or a backquote, and never allows an unmatched
// command joined to it with ; && || | or a newline unless the line's own
// quoting or comment swallows it. That last judgement is bash's: every
// line allowed under Bash(git status:*) runs in a bash where git is a stub
// that notes whether its first argument was status and every other name,
// builtins included, is not found (and noted), in an empty directory that
// must stay empty. (zsh is not on the test machines; the zsh reading is
// the parser's.)
func FuzzBashAllowed(f *testing.F) {
	for _, c := range bashCases {
		f.Add(c.command)
	}
	oracle := newBashOracle(f)
	f.Fuzz(func(t *testing.T, command string) {
		for _, rules := range [][]string{gitStatus, {"git status *", "echo *", "head *"}, {"* --version", "git *"}, {"*"}} {
			ok, why := bashAllowed(rules, command)
			if ok && (strings.Contains(command, "$(") || strings.Contains(command, "`")) {
				t.Fatalf("%q allowed under %q", command, rules)
			}
			if strings.HasPrefix(why, checkFailed) {
				t.Fatalf("%q: %s", command, why)
			}
		}
		lines := []string{command}
		for _, sep := range []string{";", "\n", "&&", "||", "|", "&"} {
			lines = append(lines, command+sep+"touch PWNED", command+" "+sep+" touch PWNED")
		}
		for _, line := range lines {
			if ok, _ := bashAllowed(gitStatus, line); ok {
				oracle.check(t, line)
			}
		}
	})
}

// bashOracle runs a line as described at FuzzBashAllowed.
type bashOracle struct {
	bash, dir string
}

func newBashOracle(f *testing.F) *bashOracle {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return nil
	}
	dir := f.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o700); err != nil {
		f.Fatal(err)
	}
	stub := "#!/bin/sh\nif [ \"$1\" = status ]; then : > \"$LOGDIR/git-status\"; else : > \"$LOGDIR/git-other\"; fi\n"
	env := "command_not_found_handle() { >> \"$LOGDIR/not-found\"; }\nenable -n $(compgen -b)\n"
	testexec.WriteExecutable(f, filepath.Join(dir, "bin", "git"), stub)
	if err := os.WriteFile(filepath.Join(dir, "env"), []byte(env), 0o600); err != nil {
		f.Fatal(err)
	}
	return &bashOracle{bash: bash, dir: dir}
}

func (o *bashOracle) check(t *testing.T, line string) {
	if o == nil {
		return
	}
	run, err := os.MkdirTemp(o.dir, "run")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(run)
	cwd, logs := filepath.Join(run, "cwd"), filepath.Join(run, "log")
	for _, d := range []string{cwd, logs} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.bash, "-c", line)
	cmd.Dir = cwd
	cmd.Env = []string{"PATH=" + filepath.Join(o.dir, "bin"), "LOGDIR=" + logs, "BASH_ENV=" + filepath.Join(o.dir, "env"), "HOME=" + cwd}
	_ = cmd.Run()
	for _, d := range []string{cwd, logs} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.Name() != "git-status" {
				t.Errorf("%q was allowed under %q, and running it left %s in %s", line, gitStatus, e.Name(), filepath.Base(d))
			}
		}
	}
}

// The zsh reading on its own: forms bash does not parse (so the bash
// reading gates them first) are gated by the zsh one too.
func TestBashCheckZsh(t *testing.T) {
	for _, line := range []string{
		"ls x(e:'touch PWNED':)", // a glob qualifier: runs code
		"ls *(e:'touch PWNED':)",
		"ls =(touch PWNED)",
		"ls ${(e)X}",
		"ls $X[1]",
		"ls $~X",
		"ls $=X",
		"git status &!",
	} {
		f, err := syntax.NewParser(syntax.Variant(syntax.LangZsh)).Parse(strings.NewReader(line), "")
		if err != nil {
			continue // not parsed: gated
		}
		c := bashCheck{src: line}
		var failed error
		for _, s := range f.Stmts {
			if failed = c.stmt(s); failed != nil {
				break
			}
		}
		if failed == nil {
			t.Errorf("%q passes as zsh: %q", line, c.cmds)
		}
	}
}

// Lines built to make the parser work hard are read, or refused, in
// bounded time: the worst, 64 KiB of nested `if`, takes about 0.15 s here
// (2.5 s under the race detector), linear in its length.
func TestBashAllowedBounded(t *testing.T) {
	for _, line := range []string{
		strings.Repeat("(", 30000) + strings.Repeat(")", 30000),
		strings.Repeat("{ ", 20000),
		strings.Repeat("if ", 21000),
		strings.Repeat("git status | ", 5000) + "git status",
		strings.Repeat("git status && ", 4600) + "git status",
		strings.Repeat("$X", 30000),
	} {
		start := time.Now()
		ok, why := bashAllowed(gitStatus, line)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%.20q…: %v (%v, %s)", line, d, ok, why)
		}
	}
	if _, why := bashAllowed(gitStatus, strings.Repeat("(", 100)+strings.Repeat(")", 100)); why != "nested too deeply" {
		t.Errorf("100 nested parentheses: %s", why)
	}
}
