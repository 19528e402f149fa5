package cli

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"looprig/internal/textsafe"
)

func cmdVersion(e *env, args []string) int {
	fs := e.newFlags("version")
	fs.BoolVar(&e.json, "json", false, "JSON output")
	pos, _, dash, code, done := e.parse(fs, args, helpVersion)
	if done {
		return code
	}
	if code, bad := e.wantNoArgs(pos, dash); bad {
		return code
	}
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
	}
	if e.json {
		e.writeJSONLine(newObj().set("version", Version).set("go", runtime.Version()).
			set("os", runtime.GOOS).set("arch", runtime.GOARCH).set("revision", rev))
		return exitOK
	}
	v := "looprig " + Version
	if rev != "" {
		v += " (" + rev + ")"
	}
	fmt.Fprintf(e.stdout, "%s\n%s %s/%s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}

// globalArgs repeats the global flags the user gave, for commands we
// suggest ("--store DIR " or "").
func (e *env) globalArgs() string {
	var b strings.Builder
	if e.storeSet {
		b.WriteString("--store " + textsafe.Line(shellQuote(e.store)) + " ")
	}
	if e.configSet {
		b.WriteString("--config " + textsafe.Line(shellQuote(e.configPath)) + " ")
	}
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func pidSelf() int { return os.Getpid() }
