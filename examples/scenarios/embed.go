// Package scenarios ships the example simulation scenarios inside the binary,
// so `nodesmith simulate` works with no file at hand.
package scenarios

import (
	"embed"
	"errors"
	"io/fs"
	"path"
)

// Default is the file name of the scenario `nodesmith simulate` runs when no
// --scenario is given.
const Default = "sqs-worker-lab.yaml"

// FS holds every example scenario, by file name. The golden timeline test
// (pkg/simulator TestGoldenTimelines) runs each of them.
//
//go:embed *.yaml
var FS embed.FS

// Long holds the scenarios too long for the golden set, under long/ (the
// 24-hour day.yaml, which pkg/simulator TestPerfDay runs under the perf
// build tag).
//
//go:embed long/*.yaml
var Long embed.FS

// Read returns the built-in scenario file name ("ice-window.yaml",
// "day.yaml"), from FS or else from Long.
func Read(name string) ([]byte, error) {
	b, err := FS.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		b, err = Long.ReadFile(path.Join("long", name))
	}
	return b, err
}

// Names lists every built-in scenario file, the golden set's first.
func Names() []string {
	var out []string
	for _, dir := range []struct {
		fs   embed.FS
		path string
	}{{FS, "."}, {Long, "long"}} {
		entries, _ := dir.fs.ReadDir(dir.path)
		for _, e := range entries {
			if !e.IsDir() && path.Ext(e.Name()) == ".yaml" {
				out = append(out, e.Name())
			}
		}
	}
	return out
}
