package engine

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bash allow rules. A Bash tool call carries a shell command line, which
// can be many commands: `git status; touch PWNED` is two. A pattern of
// agent_allow (`Bash(git status *)`) therefore does not match the line as
// a string; bashAllowed parses the line and allows it only when
//
//   - it parses, both as bash and as zsh (the agent runs it in the user's
//     shell, one or the other), into the same simple commands;
//   - it uses nothing but lists (`;`, `&&`, `||`, newlines), pipelines
//     (`|`, `|&`) and simple commands whose words are plain text, quotes
//     ('…', "…") and plain parameter expansions ($NAME, ${NAME}), with
//     the redirections bashCheck.redirect accepts;
//   - no simple command is one of gatedBuiltins, nor names its program with
//     anything but plain characters (plainName);
//   - it contains no `$(` and no backquote anywhere, quoted or not, and
//     no control character but tab and newline; and
//   - every simple command matches one of the patterns (bashPatternMatch).
//
// Everything else is gated: command and process substitution, arithmetic,
// subshells, blocks, functions, loops and conditionals, `[[ ]]`,
// backgrounding, coprocesses, `!`, `time`, declarations, assignments
// without a command, $'…' and $"…" quoting, expansions with operators
// (${X:-…}, ${X/…}, ${!X}, ${#X}, zsh's flags and subscripts), and a
// line that does not parse. A gate is asked, not a denial: the user sees
// the whole line and answers.

// checkFailed begins the reason of a line gated because checking it
// panicked.
const checkFailed = "the check failed"

// maxBashAllowed bounds the command lines bashAllowed reads: a longer one
// is gated without being parsed, which also bounds the parser's work (and
// its recursion on nested constructs, see maxBashNesting).
const maxBashAllowed = 64 << 10

// maxBashNesting bounds how deeply brackets of any kind nest in a line
// bashAllowed parses: every nested construct (subshells, blocks, arithmetic,
// expansions) is gated anyway, and the parser recurses on each level.
const maxBashNesting = 64

// gatedBuiltins are the commands gated whatever the patterns say: shell
// builtins and precommand modifiers (of bash or zsh) that run text as
// code, run a command their arguments name, or change the shell for the
// commands after them (where they are looked up, which variables and
// options they see, which directory they run in). With these out, each
// simple command of an allowed line runs what its text says, in the shell
// state the line started with.
var gatedBuiltins = map[string]bool{
	// Run text or a file as shell code, or run a command named in their
	// arguments, past the check of its name.
	"eval": true, "source": true, ".": true, "exec": true, "command": true, "builtin": true,
	"trap": true, "fc": true, "r": true, "sched": true, "coproc": true, "compgen": true, "complete": true,
	"noglob": true, "nocorrect": true, "-": true, "time": true,
	// Change how later commands are found or what they run.
	"alias": true, "unalias": true, "hash": true, "enable": true, "disable": true,
	"autoload": true, "functions": true, "unfunction": true, "zmodload": true,
	"set": true, "shopt": true, "setopt": true, "unsetopt": true, "emulate": true,
	// Set or unset variables (PATH, IFS, LD_PRELOAD, …) for later commands.
	"export": true, "declare": true, "typeset": true, "readonly": true, "local": true,
	"integer": true, "float": true, "unset": true, "read": true, "mapfile": true,
	"readarray": true, "vared": true, "getopts": true, "let": true,
	"zparseopts": true, "zformat": true, "zregexparse": true, "zstyle": true,
	// Move the working directory of every later command (and Claude Code
	// keeps it for later calls).
	"cd": true, "pushd": true, "popd": true, "chdir": true,
	"umask": true, "ulimit": true,
}

// bashAllowed reports whether command may run without a gate under
// patterns (the arguments of the profile's Bash(…) rules), and when not,
// why.
func bashAllowed(patterns []string, command string) (ok bool, why string) {
	defer func() {
		// The parser is not ours: whatever it does, the hook answers (a
		// gate) and the host lives. FuzzBashAllowed fails on this reason.
		if r := recover(); r != nil {
			ok, why = false, fmt.Sprintf("%s: %v", checkFailed, r)
		}
	}()
	if len(command) > maxBashAllowed {
		return false, fmt.Sprintf("over %d bytes", maxBashAllowed)
	}
	if strings.Contains(command, "$(") || strings.Contains(command, "`") {
		// Also quoted: some commands evaluate such text later (bash's
		// printf -v and read into an array element, arithmetic on a
		// variable's value).
		return false, "`$(` or a backquote"
	}
	if i := strings.IndexFunc(command, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f }); i >= 0 {
		// The parser takes a carriage return for a blank, the shells for
		// a letter of the word: read alike, or gated.
		return false, fmt.Sprintf("the control character %q", command[i])
	}
	if bracketDepth(command) > maxBashNesting {
		return false, "nested too deeply"
	}
	var got [2][]bashCommand
	for i, lang := range []syntax.LangVariant{syntax.LangBash, syntax.LangZsh} {
		f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(command), "")
		if err != nil {
			return false, fmt.Sprintf("does not parse as %s: %v", lang, err)
		}
		c := bashCheck{src: command}
		for _, s := range f.Stmts {
			if err := c.stmt(s); err != nil {
				return false, fmt.Sprintf("%s (as %s)", err, lang)
			}
		}
		got[i] = c.cmds
	}
	if len(got[0]) == 0 {
		return false, "no command"
	}
	if !equalCommands(got[0], got[1]) {
		return false, "bash and zsh read it differently"
	}
	for _, c := range got[0] {
		if !matchesAny(patterns, c.text) {
			return false, fmt.Sprintf("%q matches no rule", c.text)
		}
	}
	return true, ""
}

// bashCommand is one simple command of a line as the patterns see it: its
// text is its assignments and words, each rendered by bashCheck.render, joined
// by single spaces; redirections are not part of it.
type bashCommand struct {
	text string
}

func equalCommands(a, b []bashCommand) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func matchesAny(patterns []string, text string) bool {
	for _, p := range patterns {
		if bashPatternMatch(p, text) {
			return true
		}
	}
	return false
}

// bracketDepth is how deeply (, [ and { nest in s, read naively (quotes
// are not skipped): an upper bound of the parser's recursion.
func bracketDepth(s string) int {
	depth, most := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
			most = max(most, depth)
		case ')', ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return most
}

// bashCheck walks one parse of a line, collecting its simple commands; the
// first construct outside the allowed set ends the walk with an error.
type bashCheck struct {
	src  string
	cmds []bashCommand
}

func (c *bashCheck) stmt(s *syntax.Stmt) error {
	switch {
	case s.Background, s.Disown:
		return fmt.Errorf("a command in the background")
	case s.Coprocess:
		return fmt.Errorf("a coprocess")
	case s.Negated:
		return fmt.Errorf("`!`")
	}
	for _, r := range s.Redirs {
		if err := c.redirect(r); err != nil {
			return err
		}
	}
	switch x := s.Cmd.(type) {
	case *syntax.CallExpr:
		return c.call(x)
	case *syntax.BinaryCmd:
		switch x.Op {
		case syntax.AndStmt, syntax.OrStmt, syntax.Pipe, syntax.PipeAll:
		default:
			return fmt.Errorf("`%s`", x.Op)
		}
		if err := c.stmt(x.X); err != nil {
			return err
		}
		return c.stmt(x.Y)
	case nil:
		return fmt.Errorf("a redirection without a command") // zsh runs $NULLCMD or $READNULLCMD
	default:
		return fmt.Errorf("%s", constructName(x))
	}
}

// constructName names a command other than a simple one, lists and
// pipelines, for the reason a line is gated.
func constructName(n syntax.Command) string {
	switch n.(type) {
	case *syntax.Subshell:
		return "a subshell"
	case *syntax.Block:
		return "a { } block"
	case *syntax.FuncDecl:
		return "a function"
	case *syntax.IfClause, *syntax.CaseClause:
		return "a conditional"
	case *syntax.WhileClause, *syntax.ForClause:
		return "a loop"
	case *syntax.ArithmCmd, *syntax.LetClause:
		return "arithmetic"
	case *syntax.TestClause, *syntax.TestDecl:
		return "[[ ]]"
	case *syntax.DeclClause:
		return "a declaration"
	case *syntax.TimeClause:
		return "time"
	case *syntax.CoprocClause:
		return "a coprocess"
	}
	return fmt.Sprintf("%T", n)
}

func (c *bashCheck) call(x *syntax.CallExpr) error {
	if len(x.Args) == 0 {
		return fmt.Errorf("an assignment without a command")
	}
	var words []string
	for _, a := range x.Assigns {
		if a.Index != nil || a.Array != nil || a.Naked || a.Name == nil {
			return fmt.Errorf("an array assignment")
		}
		v := ""
		if a.Value != nil {
			var err error
			if v, err = c.render(a.Value); err != nil {
				return err
			}
		}
		op := "="
		if a.Append {
			op = "+="
		}
		words = append(words, a.Name.Value+op+v)
	}
	name, static, err := staticValue(x.Args[0])
	if err != nil {
		return err
	}
	if !static || !plainName(name) {
		return fmt.Errorf("a command name that is not plain text")
	}
	if gatedBuiltins[name] {
		return fmt.Errorf("`%s`", name)
	}
	for _, w := range x.Args {
		r, err := c.render(w)
		if err != nil {
			return err
		}
		if (name == "printf" || name == "print") && strings.HasPrefix(r, "-v") {
			return fmt.Errorf("`%s -v`", name) // it sets a variable
		}
		words = append(words, r)
	}
	c.cmds = append(c.cmds, bashCommand{text: strings.Join(words, " ")})
	return nil
}

// plainName reports whether a command's name, as the shell sees it, is
// plain: letters, digits and _ . / + , : @ % - (a path, or `[`), so that
// no glob, brace expansion, tilde or lookalike character decides which
// program runs.
func plainName(s string) bool {
	if s == "[" {
		return true
	}
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("_./+,:@%-", r):
		default:
			return false
		}
	}
	return true
}

// redirect checks one redirection of an allowed line. Output goes
// only to /dev/null or to another descriptor (`2>&1`, `>&2`, `>&-`): a
// file the line writes depends on the directory the shell is in and on
// the links on its way, which a rule cannot see, so writing any file is
// gated (the agent's Write and Edit tools write files). Input may come from
// a file named in plain text (not /dev/tcp and its like: /dev/ is gated
// but /dev/null), a here-document or a here-string whose expansions are
// plain; a here-document only in a line without line continuations.
func (c *bashCheck) redirect(r *syntax.Redirect) error {
	if r.N != nil && !allDigits(r.N.Value) {
		return fmt.Errorf("a redirection into a variable")
	}
	target := ""
	if r.Word != nil {
		v, static, err := staticValue(r.Word)
		if err != nil {
			return err
		}
		if static {
			target = v
		} else if r.Op != syntax.WordHdoc {
			return fmt.Errorf("a redirection to a name that is not plain text")
		}
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		if target != "/dev/null" {
			return fmt.Errorf("a redirection that writes %q", target)
		}
	case syntax.DplOut:
		if !allDigits(target) && target != "-" && target != "/dev/null" {
			return fmt.Errorf("a redirection that writes %q", target)
		}
	case syntax.DplIn:
		if !allDigits(target) && target != "-" {
			return fmt.Errorf("a redirection that reads %q", target)
		}
	case syntax.RdrIn:
		if p := path.Clean(target); strings.HasPrefix(p, "/dev/") && p != "/dev/null" {
			return fmt.Errorf("a redirection that reads %q", target)
		}
	case syntax.Hdoc, syntax.DashHdoc:
		if strings.Contains(c.src, "\\\n") {
			// Bash joins a body's continued lines before it compares them
			// with the delimiter (`E\` then an empty line ends the body);
			// the parser does not always, and then reads as body the
			// commands bash runs after it.
			return fmt.Errorf("a line continuation beside a here-document")
		}
		if r.Hdoc != nil {
			for _, p := range r.Hdoc.Parts {
				switch p := p.(type) {
				case *syntax.Lit:
				case *syntax.ParamExp:
					if _, err := c.param(p); err != nil {
						return err
					}
				default:
					return fmt.Errorf("%s in a here-document", partName(p))
				}
			}
		}
	case syntax.WordHdoc:
		if _, err := c.render(r.Word); err != nil {
			return err
		}
	default:
		return fmt.Errorf("the redirection `%s`", r.Op)
	}
	return nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// render is how a word reads in a command's text: its text after quote
// removal, each run of it that holds a character outside wordSafe in single
// quotes, and each parameter expansion as written ($HOME, ${HOME}). So
// `'git' status` reads `git status`, `git "status; x"` reads
// `git 'status; x'` (one word: a pattern's spaces stay word boundaries),
// and a lookalike letter is quoted, never mistaken for the letter.
func (c *bashCheck) render(w *syntax.Word) (string, error) {
	var b, run strings.Builder
	flush := func() {
		s := run.String()
		run.Reset()
		if s == "" {
			return
		}
		for _, r := range s {
			if !wordSafe(r) {
				b.WriteString("'" + strings.ReplaceAll(s, "'", `'\''`) + "'")
				return
			}
		}
		b.WriteString(s)
	}
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if hasParen(p.Value) {
				return "", fmt.Errorf("a glob qualifier")
			}
			run.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", fmt.Errorf("$'…' quoting")
			}
			run.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", fmt.Errorf("$\"…\" quoting")
			}
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					run.WriteString(unescape(q.Value, true))
				case *syntax.ParamExp:
					pe, err := c.param(q)
					if err != nil {
						return "", err
					}
					flush()
					b.WriteString(pe)
				default:
					return "", fmt.Errorf("%s", partName(q))
				}
			}
		case *syntax.ParamExp:
			pe, err := c.param(p)
			if err != nil {
				return "", err
			}
			flush()
			b.WriteString(pe)
		default:
			return "", fmt.Errorf("%s", partName(p))
		}
	}
	flush()
	return b.String(), nil
}

// wordSafe: the characters a word's text shows unquoted (render). Glob
// and brace characters are among them, so `ls *.go` and `ls '*.go'` read
// alike; a pattern's literal part names a program and its first words,
// where they never appear unquoted (plainName).
func wordSafe(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("_./+,:@%=~^*?[]{}!#-", r)
}

// param checks a parameter expansion is plain, $NAME or ${NAME}, NAME a
// variable's name, a positional parameter or a special one ($?, $#, $@, …),
// and returns it as written. Read from the source, so no operator, flag or
// subscript of either shell gets past.
func (c *bashCheck) param(p *syntax.ParamExp) (string, error) {
	start, end := p.Pos().Offset(), p.End().Offset()
	if start >= end || end > uint(len(c.src)) {
		// An expansion the line ends in the middle of (zsh's `$A[0[`):
		// the parser's end lies past the source.
		return "", fmt.Errorf("an unfinished expansion")
	}
	s := c.src[start:end]
	name, ok := strings.CutPrefix(s, "$")
	if strings.HasPrefix(name, "{") {
		name, ok = strings.CutSuffix(name[1:], "}")
	}
	if !ok || !paramName(name) {
		return "", fmt.Errorf("the expansion %s", s)
	}
	return s, nil
}

func paramName(s string) bool {
	if len(s) == 1 && strings.Contains("?#@*$!-_", s) || allDigits(s) {
		return true
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

// partName names a part of a word outside the allowed set.
func partName(p syntax.WordPart) string {
	switch p := p.(type) {
	case *syntax.CmdSubst:
		return "command substitution"
	case *syntax.ProcSubst:
		return "process substitution"
	case *syntax.ArithmExp:
		return "arithmetic"
	case *syntax.ExtGlob:
		return "an extended glob"
	case *syntax.ParamExp:
		return "the expansion"
	default:
		return fmt.Sprintf("%T", p)
	}
}

// staticValue is a word's value when it has no expansion at all (static is
// false otherwise); an error for a part outside the allowed set.
func staticValue(w *syntax.Word) (v string, static bool, err error) {
	var b strings.Builder
	static = true
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if hasParen(p.Value) {
				return "", false, fmt.Errorf("a glob qualifier")
			}
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false, fmt.Errorf("$'…' quoting")
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false, fmt.Errorf("$\"…\" quoting")
			}
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					b.WriteString(unescape(q.Value, true))
				case *syntax.ParamExp:
					static = false
				default:
					return "", false, fmt.Errorf("%s", partName(q))
				}
			}
		case *syntax.ParamExp:
			static = false
		default:
			return "", false, fmt.Errorf("%s", partName(p))
		}
	}
	return b.String(), static, nil
}

// hasParen reports whether an unquoted literal holds a parenthesis that is
// not escaped: zsh reads `*(e:…:)` as a glob with a qualifier, which runs
// code; bash does not parse such a word at all.
func hasParen(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '(', ')':
			return true
		}
	}
	return false
}

// unescape removes the backslashes the shell removes from a literal:
// unquoted, every one escapes the character after it; in double quotes,
// only before $ ` " and \. (The parser already dropped escaped newlines.)
func unescape(s string, dquoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (!dquoted || strings.IndexByte("$`\"\\", s[i+1]) >= 0) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// bashPatternMatch reports whether a simple command's text matches the
// argument of a Bash(…) rule, as Claude Code reads those rules:
//
//   - `git status` matches that command exactly;
//   - `git status *` (a space, then `*` as the pattern's only wildcard)
//     matches `git status` alone or followed by a space and anything: a
//     prefix of whole words, so not `git statusX`;
//   - `git status:*` is the older spelling of the same;
//   - any other `*` stands for any run of characters, spaces included:
//     `git status*` also matches `git statusX`, and `git * main` matches
//     `git push origin main`;
//   - `\*` is a literal star and `\\` a literal backslash.
//
// The text is the one command, never the line around it: what a pattern
// allows is always one simple command with the words it matches.
func bashPatternMatch(pattern, text string) bool {
	pattern = strings.TrimSpace(pattern)
	if prefix, ok := strings.CutSuffix(pattern, ":*"); ok {
		return text == prefix || strings.HasPrefix(text, prefix+" ")
	}
	parts := splitStars(pattern)
	if n := len(parts); n == 2 && strings.HasSuffix(parts[0], " ") && parts[1] == "" {
		prefix := strings.TrimSuffix(parts[0], " ")
		return text == prefix || strings.HasPrefix(text, prefix+" ")
	}
	return starMatch(parts, text)
}

// splitStars splits a pattern at its unescaped stars, removing the escapes
// of `\*` and `\\`: n stars make n+1 literal parts.
func splitStars(pattern string) []string {
	var parts []string
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch {
		case pattern[i] == '\\' && i+1 < len(pattern) && (pattern[i+1] == '*' || pattern[i+1] == '\\'):
			i++
			b.WriteByte(pattern[i])
		case pattern[i] == '*':
			parts = append(parts, b.String())
			b.Reset()
		default:
			b.WriteByte(pattern[i])
		}
	}
	return append(parts, b.String())
}

// starMatch matches s against literal parts with a star between each two:
// the first part a prefix, the last a suffix, the others in order between.
func starMatch(parts []string, s string) bool {
	if len(parts) == 1 {
		return parts[0] == s
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return true
}
