//go:build perf

package perf

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// make perf holds every scenario to all of Karpenter's limits.
func init() { assertLimits = true }

// TestPerfKarpenterSuite runs every scenario of Karpenter's performance
// suite against the controller, three times each (once for the two long
// ones, hostname spread XL and drift), and the table is printed when the
// test binary ends. NODESMITH_PERF_RUNS sets the number of runs of every
// scenario; NODESMITH_PERF_LOGS=dir keeps each run's controller log there; pick
// scenarios with -run, e.g.
//
//	make perf                                     # everything
//	go test -tags perf ./test/perf -run 'TestPerfKarpenterSuite/drift' -v -timeout 90m
//
// The basic scale-out and the consolidation to 700 pods are one run, as in
// Karpenter's suite: the scale-out's figures are checked against the basic
// limits, the scale-down's against consolidation's.
func TestPerfKarpenterSuite(t *testing.T) {
	runs, err := perfRuns()
	if err != nil {
		t.Fatal(err)
	}
	times := func(long bool) int {
		if runs > 0 {
			return runs
		}
		if long {
			return 1
		}
		return 3
	}
	for i := 1; i <= times(false); i++ {
		t.Run(fmt.Sprintf("basic-and-consolidation/run-%d", i), func(t *testing.T) { runBasicAndConsolidation(t, i) })
	}
	for _, s := range []struct {
		sc   scenario
		long bool
	}{
		{scHostnameSpread, false},
		{scSelfAntiAffinity, false},
		{scWide, false},
		{scDoNotDisrupt, false},
		{scHostnameSpreadXL, true},
		{scDrift, true},
	} {
		for i := 1; i <= times(s.long); i++ {
			t.Run(fmt.Sprintf("%s/run-%d", s.sc.key, i), func(t *testing.T) { runScenario(t, s.sc, i) })
		}
	}
}

// perfRuns reads NODESMITH_PERF_RUNS: unset is 0 (each scenario's
// default), otherwise a positive number of runs.
func perfRuns() (int, error) {
	v, ok := os.LookupEnv("NODESMITH_PERF_RUNS")
	if !ok || v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("NODESMITH_PERF_RUNS=%q: want a positive number of runs", v)
	}
	return n, nil
}
