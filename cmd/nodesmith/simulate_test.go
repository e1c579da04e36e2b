package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

func TestLoadScenario(t *testing.T) {
	dir := t.TempDir()
	custom := filepath.Join(dir, "mine.yaml")
	b, err := os.ReadFile("../../examples/scenarios/sqs-worker-lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(custom, bytes.Replace(b, []byte("name: sqs-worker-lab"), []byte("name: mine"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		arg      string
		wantName string
		wantErr  string
	}{
		{arg: "", wantName: "sqs-worker-lab"},
		{arg: "ice-window.yaml", wantName: "ice-window"},
		{arg: "spot-interruption", wantName: "spot-interruption"},
		{arg: "day", wantName: "day"},
		{arg: "examples/scenarios/spot-interruption.yaml", wantName: "spot-interruption"},
		{arg: custom, wantName: "mine"},
		{arg: "nope.yaml", wantErr: "no built-in example"},
		{arg: "nope", wantErr: "no built-in example"},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			sc, err := loadScenario(tt.arg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sc.Name != tt.wantName {
				t.Errorf("name = %s, want %s", sc.Name, tt.wantName)
			}
		})
	}
}

func TestSimulateWritesOutputs(t *testing.T) {
	dir := t.TempDir()
	cmd := newSimulateCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--out", dir, "--seed", "3"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"timeline.csv", "timeline.png", "report.md"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	if got := out.String(); !strings.Contains(got, "scenario sqs-worker-lab (seed 3") || strings.Contains(got, "\r") {
		t.Errorf("stdout = %q, want the summary with the seed and no progress line (not a terminal)", got)
	}
}

// A run longer than an hour also writes hourly.csv, one row per hour, and
// the report's hour-by-hour section; a shorter one writes neither.
func TestSimulateWritesHourlyTable(t *testing.T) {
	dir := t.TempDir()
	cmd := newSimulateCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--out", dir, "--scenario", "rebalance-recommendation"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "hourly.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 4 || lines[0] != output.HourlyHeader {
		t.Errorf("hourly.csv of a 3-hour run:\n%s\nwant the header and 3 rows", b)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "## Hour by hour") || !strings.Contains(out.String(), "hourly.csv") {
		t.Errorf("report.md has no hour-by-hour section, or stdout does not name hourly.csv:\n%s", out.String())
	}

	short := t.TempDir()
	cmd = newSimulateCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--out", short})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(short, "hourly.csv")); err == nil {
		t.Errorf("a 20-minute run wrote hourly.csv")
	}
}

// --compare-commitments runs the scenario again ignoring its reservations
// and commitments, writes that run into DIR/ignored and compares both in
// report.md; a scenario with nothing to ignore is refused.
func TestSimulateComparesCommitments(t *testing.T) {
	dir := t.TempDir()
	cmd := newSimulateCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--out", dir, "--scenario", "savings-plan", "--compare-commitments"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "ignored", "timeline.csv")); err != nil || fi.Size() == 0 {
		t.Errorf("ignored/timeline.csv missing or empty: %v", err)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	// savings-plan's figures (docs/scenarios.md): $0.7667 honoured, $0.8924 ignored.
	for _, want := range []string{"## Commitments honoured and ignored", "| nodes launched: reserved / on-demand / spot | 0 / 1 / 2 | 0 / 0 / 3 |",
		"| **total paid** | **$0.7667** | **$0.8924** |", "Ignoring them costs $0.1257 more"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if !strings.Contains(out.String(), "total paid        honoured $0.7667, ignored $0.8924.") {
		t.Errorf("stdout lacks the comparison:\n%s", out.String())
	}

	cmd = newSimulateCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--out", t.TempDir(), "--compare-commitments"})
	if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "no capacity reservations and no commitments") {
		t.Errorf("error = %v, want the default scenario refused: it has nothing to ignore", err)
	}
}
