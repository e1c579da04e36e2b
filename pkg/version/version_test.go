package version

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/nodesmith/nodesmith", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-12-06T21:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	installed := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/nodesmith/nodesmith", Version: "v0.2.0"}}
	for _, tc := range []struct {
		name  string
		stamp Info
		bi    *debug.BuildInfo
		want  Info
		line  string
	}{
		{name: "no build information", want: Info{Version: "(devel)", Commit: Unknown, Date: Unknown},
			line: "(devel) (commit unknown)"},
		{name: "checkout built with -buildvcs", bi: vcs,
			want: Info{Version: "(devel)", Commit: "0123abcd", Date: "2026-12-06T21:00:00Z", Modified: true, Go: "go1.26.0"},
			line: "(devel) (commit 0123abcd-modified, 2026-12-06T21:00:00Z, go1.26.0)"},
		{name: "go install at a module version", bi: installed,
			want: Info{Version: "v0.2.0", Commit: Unknown, Date: Unknown, Go: "go1.26.0"},
			line: "v0.2.0 (commit unknown, go1.26.0)"},
		{name: "release stamp wins over the build information", bi: vcs,
			stamp: Info{Version: "v0.1.0", Commit: "feedbeef", Date: "2026-12-01T00:00:00Z"},
			want:  Info{Version: "v0.1.0", Commit: "feedbeef", Date: "2026-12-01T00:00:00Z", Go: "go1.26.0"},
			line:  "v0.1.0 (commit feedbeef, 2026-12-01T00:00:00Z, go1.26.0)"},
		{name: "a partial stamp keeps the rest", bi: vcs, stamp: Info{Version: "v0.1.0"},
			want: Info{Version: "v0.1.0", Commit: "0123abcd", Date: "2026-12-06T21:00:00Z", Modified: true, Go: "go1.26.0"},
			line: "v0.1.0 (commit 0123abcd-modified, 2026-12-06T21:00:00Z, go1.26.0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolve(tc.stamp, tc.bi)
			if got != tc.want {
				t.Errorf("resolve = %+v, want %+v", got, tc.want)
			}
			if got.String() != tc.line {
				t.Errorf("String = %q, want %q", got.String(), tc.line)
			}
		})
	}
}
