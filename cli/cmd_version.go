package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

var cmdVersion = &command{
	name: "version", brief: "print the version", help: helpVersion,
	json: true, args: noArgs, run: runVersion,
}

func runVersion(c *call) int {
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
	}
	if c.json {
		c.writeJSON(versionJSON{Version: Version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Revision: rev})
		return exitOK
	}
	v := "looprig " + Version
	if rev != "" {
		v += " (" + rev + ")"
	}
	fmt.Fprintf(c.stdout, "%s\n%s %s/%s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}
