package app

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// buildCommit is the VCS commit for builds the toolchain could not stamp
// (a git worktree, -buildvcs=false); the Makefile sets it with -ldflags -X.
var buildCommit string

// Version says which build this is: the module version and the VCS commit
// (with its time, and "+modified" for a build from a changed tree), from
// the information the Go toolchain stamps into the binary.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "iggy-s3-sink (no build information)"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	out := "iggy-s3-sink " + v
	if rev == "" && buildCommit != "" {
		rev, modified = strings.TrimSuffix(buildCommit, "+modified"), strings.HasSuffix(buildCommit, "+modified")
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if modified {
			rev += "+modified"
		}
		out += fmt.Sprintf(" (commit %s", rev)
		if at != "" {
			out += ", " + at
		}
		out += ")"
	}
	return out + ", " + bi.GoVersion
}
