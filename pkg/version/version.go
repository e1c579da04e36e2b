package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Stamped by -ldflags -X for release builds; empty otherwise.
var (
	version string
	commit  string
	date    string
)

// Unknown stands for what neither the stamp nor the build information says.
const Unknown = "unknown"

// Info is one build's identity.
type Info struct {
	// Version is the release (v0.1.0), or "(devel)" for a build from a checkout.
	Version string
	// Commit is the Git revision the binary was built from.
	Commit string
	// Date is the commit's time (RFC 3339).
	Date string
	// Modified says the checkout had uncommitted changes.
	Modified bool
	// Go is the toolchain that built the binary.
	Go string
}

// Get is this binary's Info: the -ldflags stamp where set, the Go build
// information elsewhere.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return resolve(Info{Version: version, Commit: commit, Date: date}, bi)
}

// resolve fills what the stamp leaves empty from the build information.
func resolve(stamp Info, bi *debug.BuildInfo) Info {
	info := Info{Version: "(devel)", Commit: Unknown, Date: Unknown}
	if bi != nil {
		info.Go = bi.GoVersion
		if v := bi.Main.Version; v != "" {
			info.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.time":
				info.Date = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if stamp.Version != "" {
		info.Version = stamp.Version
	}
	if stamp.Commit != "" {
		// A stamped commit is what the release names; a dirty tree says so in
		// the stamp itself (make appends -dirty).
		info.Commit, info.Modified = stamp.Commit, false
	}
	if stamp.Date != "" {
		info.Date = stamp.Date
	}
	return info
}

// String is the --version line: "<name> <version> (commit <rev>[, modified], <date>, <go>)".
func (i Info) String() string {
	parts := []string{"commit " + i.Commit}
	if i.Modified {
		parts[0] += "-modified"
	}
	if i.Date != Unknown && i.Date != "" {
		parts = append(parts, i.Date)
	}
	if i.Go != "" {
		parts = append(parts, i.Go)
	}
	return fmt.Sprintf("%s (%s)", i.Version, strings.Join(parts, ", "))
}
