package main

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGolden runs each snapshot of testdata/explain and testdata/plan with
// the arguments on its "# args:" line and compares stdout (and stderr, after
// a "--- stderr" line) with the .golden file next to it.
// go test ./cmd/nodesmith -run TestGolden -update rewrites them; review the diff.
func TestGolden(t *testing.T) {
	explain, err := filepath.Glob(filepath.Join("testdata", "explain", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pending := 0
	for _, f := range explain {
		if strings.Contains(strings.Join(caseArgs(t, f), " "), "explain pod") && !strings.Contains(f, "bound") {
			pending++
		}
	}
	if pending < 10 {
		t.Fatalf("%d pending-pod explain cases, want at least 10", pending)
	}
	plan, err := filepath.Glob(filepath.Join("testdata", "plan", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range append(explain, plan...) {
		name := filepath.Base(filepath.Dir(file)) + "/" + strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			args := caseArgs(t, file)
			stdout, stderr := run(t, append(args, "--snapshot", file)...)
			got := stdout
			if stderr != "" {
				got += "--- stderr\n" + stderr
			}
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("nodesmith %s differs from %s:\n--- got\n%s--- want\n%s", strings.Join(args, " "), golden, got, want)
			}
		})
	}
}

func caseArgs(t *testing.T, file string) []string {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "# args:"); ok {
			return strings.Fields(rest)
		}
	}
	t.Fatalf("%s has no # args: line", file)
	return nil
}

// run executes the CLI and returns stdout and stderr.
func run(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCommand(&out, &errOut)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		t.Fatalf("nodesmith %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String()
}
