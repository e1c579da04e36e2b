//go:build perf

package simulator

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodesmith/nodesmith/examples/scenarios"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

// TestPerfDay runs the built-in 24-hour scenario (examples/scenarios/long/
// day.yaml, issue 22's "day that runs itself"), pins its timeline and its
// hourly table byte for byte (testdata/golden/day.csv, day-hourly.csv;
// -update rewrites them) and checks the day's three goals:
//  1. no launch/delete loop: in no hour are more than two instances of one
//     pool and type launched and removed again by Nodesmith's own decision
//     (Hour.Churn);
//  2. in every quiet hour (output.IsQuiet: no scenario event or workload
//     schedule change in the hour or the 30 minutes before it, wanted pods
//     within 5 %) the hour's cost is within 10 % of a fresh plan of its
//     pods (Hour.Ratio); at least six hours must be quiet, so the goal is
//     never met by having none;
//  3. every pod a spot interruption notice moved runs again before its
//     instance is reclaimed: the node was drained onto ready capacity
//     (Stranded 0) and at the notice's deadline, when EC2 reclaims the
//     instance, none of the pods of the workloads it ran was pending,
//     starting or still on it (NotRunningAtDeadline 0).
//
// It also checks the scenario did what it says: the rebalance
// recommendation launched at most one node and kept its node, an ICE
// fallback returned to spot, both AMI releases were noted and drift
// replaced nodes, nothing was removed by Nodesmith's own decision inside
// the night budget window, and the midnight release's drift was carried
// out after the window opened.
//
// It runs under the perf build tag only (make perf): a 24-hour run takes
// minutes.
func TestPerfDay(t *testing.T) {
	b, err := scenarios.Read("day.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := run(t, sc)
	t.Logf("24 virtual hours simulated in %s wall", time.Since(start).Round(time.Second))

	var table bytes.Buffer
	if err := output.WriteHourlyCSV(&table, res.Hours); err != nil {
		t.Fatal(err)
	}
	t.Logf("hourly table:\n%s", table.String())
	if len(res.Hours) != 24 {
		t.Fatalf("%d hourly rows, want 24", len(res.Hours))
	}
	checkGolden(t, "day", res)
	checkHourlyGolden(t, "day-hourly", table.Bytes())

	quiet := 0
	for i, h := range res.Hours {
		if h.Churn > 2 {
			t.Errorf("goal 1, hour %d: %d instances of %s launched and removed within the hour (a launch/delete loop)", i, h.Churn, h.ChurnOf)
		}
		if !h.Quiet {
			continue
		}
		quiet++
		if h.Fresh <= 0 {
			t.Errorf("goal 2, hour %d: quiet but no fresh plan to compare with", i)
		} else if h.Ratio() > 1.10 {
			t.Errorf("goal 2, hour %d (quiet, %d–%d pods): cost $%.4f is %.2f× the fresh plan's $%.4f (want within 10 %%)",
				i, h.PodsMin, h.PodsMax, h.Cost, h.Ratio(), h.Fresh)
		}
	}
	if quiet < 6 {
		t.Errorf("goal 2: %d quiet hours, want at least 6 (the scenario's nights and its lunchtime plateau)", quiet)
	}
	spot := 0
	for _, in := range res.Interruptions {
		if in.Kind != "spot interruption" {
			continue
		}
		spot++
		if !in.Drained.Reached || !in.Gone.Reached || in.Stranded != 0 || in.NotRunningAtDeadline != 0 {
			t.Errorf("goal 3, notice at %s about %s: drained %s, gone %s, %d stranded, %d of its workloads' pods not running elsewhere at the deadline %s",
				output.FormatDuration(in.At), in.NodeClaim, in.Drained, in.Gone, in.Stranded, in.NotRunningAtDeadline, in.Deadline)
		}
	}
	// The rebalance recommendation no interruption follows: the default
	// prespin mode launches at most one node for it and keeps the node.
	rebalance := 0
	for _, in := range res.Interruptions {
		if in.Kind != "rebalance recommendation" {
			continue
		}
		rebalance++
		launched := 0
		for _, r := range in.Replacements {
			if r.NewNode {
				launched++
			}
		}
		if launched > 1 || in.Drained.Reached {
			t.Errorf("rebalance recommendation at %s about %s: %d new nodes, drained %s (want at most one, and the node kept)",
				output.FormatDuration(in.At), in.NodeClaim, launched, in.Drained)
		}
	}
	if rebalance != 1 {
		t.Errorf("%d rebalance recommendations reached Nodesmith nodes, want 1", rebalance)
	}
	if spot < 5 {
		t.Errorf("goal 3: %d spot interruption notices reached Nodesmith nodes, want the scenario's 7 (at least 5)", spot)
	}
	var notes []string
	for _, n := range res.Notes {
		if strings.Contains(n, "AMI release") {
			notes = append(notes, n)
		}
	}
	drifted, returned := 0, 0
	for _, l := range res.Launches {
		switch l.Reason {
		case "drifted":
			drifted++
		case "returned to spot":
			returned++
		}
	}
	// The ICE windows sent launches on-demand; spot's return brought them back.
	if returned == 0 {
		t.Errorf("no on-demand fallback node returned to spot after the ICE windows")
	}
	if len(notes) != 2 || drifted == 0 {
		t.Errorf("the AMI releases: notes %q, %d nodes replaced as drifted (want both releases noted and drift replacing nodes)", notes, drifted)
	}
	// The night window (budget nodes "0" from 22:00 UTC for 8h: t=13h to
	// t=21h) lets no node go by Nodesmith's own decision; the midnight
	// release's drift waits for it to open.
	night := func(d time.Duration) bool { return d >= 13*time.Hour && d < 21*time.Hour }
	morningDrift := 0
	for _, l := range res.Launches {
		if !l.Terminated {
			continue
		}
		if night(l.TerminatedAt) && l.Reason != "spot interruption" {
			t.Errorf("%s (%s) removed at %s (%s), inside the night budget window", l.NodeClaim, l.InstanceType, output.FormatDuration(l.TerminatedAt), l.Reason)
		}
		if l.Reason == "drifted" && l.TerminatedAt >= 21*time.Hour {
			morningDrift++
		}
	}
	if morningDrift == 0 {
		t.Errorf("no node drifted by the midnight AMI release was replaced after the night window opened at t=21h")
	}
}

// checkHourlyGolden compares an hourly table with testdata/golden/<name>.csv,
// or rewrites it under -update.
func checkHourlyGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".csv")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -tags perf -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("hourly table of %s differs from %s: %s", name, path, firstDiff(want, got))
	}
}
