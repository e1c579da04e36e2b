package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/nodesmith/nodesmith/test/testenv"
)

var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$`)

// TestOneVersion: a release has one version number. The chart's version is
// the source; its appVersion (the default image tag) equals it, and make
// stamps the binaries and the image with it.
func TestOneVersion(t *testing.T) {
	root := testenv.RepoRoot()
	raw, err := os.ReadFile(filepath.Join(root, "charts", "nodesmith", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := sigsyaml.Unmarshal(raw, &chart); err != nil {
		t.Fatal(err)
	}
	if !semver.MatchString(chart.Version) {
		t.Errorf("Chart.yaml version %q is not SemVer 2 (Helm needs it)", chart.Version)
	}
	if chart.AppVersion != chart.Version {
		t.Errorf("Chart.yaml appVersion %q differs from version %q: they are one number (docs/upgrade.md)", chart.AppVersion, chart.Version)
	}
	out, err := exec.Command("make", "-C", root, "-s", "-n", "image", "build").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n image build: %v\n%s", err, out)
	}
	for _, want := range []string{"--version " + chart.Version + " ", "pkg/version.version=" + chart.Version + " "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make image/build do not stamp the chart's version (want %q in):\n%s", want, out)
		}
	}
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(changelog), "\n## [Unreleased]\n") {
		t.Error("CHANGELOG.md has no [Unreleased] section")
	}
}
