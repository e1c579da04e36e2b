package e2e

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodesmith/nodesmith/pkg/kubesnapshot"
	"github.com/nodesmith/nodesmith/pkg/whatif"
)

// planMatchesCostMetrics takes a snapshot of the lab cluster as `nodesmith
// snapshot` does and runs `nodesmith plan` on it: the fleet's $/h the plan
// reports must be what the controller's cost metric exports (both sum the
// NodeClaims' status.price, through pkg/cost). The metric is refreshed
// every 30 s, so the step waits for one refresh after the fleet settled.
func planMatchesCostMetrics(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	lab.controller.Stop()
	if err := lab.startController("--metrics-bind-address=" + addr); err != nil {
		t.Fatal(err)
	}
	defer func() {
		lab.controller.Stop()
		if err := lab.startController(); err != nil {
			t.Fatal(err)
		}
	}()
	var plan *whatif.PlanResult
	var metric float64
	waitFor(t, 2*time.Minute, "the plan's $/h equal to the cost metric", func() error {
		snap, _, err := kubesnapshot.Take(ctx(), kube(), "lab", time.Now())
		if err != nil {
			return err
		}
		if plan, err = whatif.Plan(snap, whatif.ModeRepack, whatif.Options{}); err != nil {
			return err
		}
		page, err := httpGet("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		metric, err = sumMetric(page, "nodesmith_cost_dollars_per_hour")
		if err != nil {
			return err
		}
		if plan.Nodesmith.Nodes == 0 || math.Abs(plan.Nodesmith.PerHour-metric) > 1e-6 {
			return fmt.Errorf("plan: %d nodes at $%.6f/h; metric: $%.6f/h", plan.Nodesmith.Nodes, plan.Nodesmith.PerHour, metric)
		}
		return nil
	})
	t.Logf("plan on a snapshot of the lab: %d Nodesmith nodes at $%.4f/h (the cost metric: $%.4f/h); a repack would cost $%.4f/h on %d nodes, lower bound $%.4f/h",
		plan.Nodesmith.Nodes, plan.Nodesmith.PerHour, metric, plan.New.PerHour, plan.New.Nodes, plan.LowerBound)
}

// sumMetric adds up every sample of a metric family in a Prometheus text page.
func sumMetric(page, name string) (float64, error) {
	samples, err := metricSamples(page, name)
	total := 0.0
	for _, sm := range samples {
		total += sm.value
	}
	return total, err
}

type metricSample struct {
	labels string // "{k=\"v\",...}", or empty
	value  float64
}

// metricSamples reads every sample of a metric family from a Prometheus
// text page; a family with no sample is an error (not exported yet).
func metricSamples(page, name string) ([]metricSample, error) {
	var out []metricSample
	for _, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		out = append(out, metricSample{labels: strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, name), f[len(f)-1])), value: v})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s sample yet", name)
	}
	return out, nil
}
