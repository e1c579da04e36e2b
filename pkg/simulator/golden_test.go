package simulator

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodesmith/nodesmith/examples/scenarios"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

var update = flag.Bool("update", false, "rewrite the golden timelines in testdata/golden")

// TestGoldenTimelines pins the timeline of every built-in scenario byte for
// byte: the simulator is deterministic, so any change in the product's
// decisions (or in the parts the simulator plays) shows here. After an
// intended change, rerun with -update and read the diff.
func TestGoldenTimelines(t *testing.T) {
	entries, err := scenarios.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".yaml" {
			continue
		}
		n++
		name := strings.TrimSuffix(e.Name(), ".yaml")
		t.Run(name, func(t *testing.T) {
			checkGolden(t, name, runCached(t, e.Name()))
		})
	}
	if n < 4 {
		t.Fatalf("%d built-in scenarios, want at least 4", n)
	}
}

// checkGolden compares res's timeline with testdata/golden/<name>.csv
// byte for byte, or rewrites the file under -update.
func checkGolden(t *testing.T, name string, res *output.Result) {
	t.Helper()
	var got bytes.Buffer
	if err := output.WriteCSV(&got, res.Samples); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden", name+".csv")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("timeline of %s differs from %s: %s", name, path, firstDiff(want, got.Bytes()))
	}
}

func firstDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(w) && i < len(g); i++ {
		if w[i] != g[i] {
			return fmt.Sprintf("line %d: want %q, got %q", i+1, w[i], g[i])
		}
	}
	return fmt.Sprintf("%d and %d lines", len(w), len(g))
}
