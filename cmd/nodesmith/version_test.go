package main

import (
	"strings"
	"testing"

	"github.com/nodesmith/nodesmith/pkg/version"
)

// TestVersionFlag: --version prints the build's version and commit.
func TestVersionFlag(t *testing.T) {
	out, _, err := execute("--version")
	if err != nil {
		t.Fatal(err)
	}
	v := version.Get()
	want := "nodesmith " + v.Version + " (commit " + v.Commit
	if !strings.HasPrefix(out, want) || !strings.HasSuffix(out, ")\n") {
		t.Errorf("--version printed %q, want it to start %q", out, want)
	}
}
