package provisioner

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// TestProvisionMetrics reads what one provisioning round reports, the
// figures Karpenter's scheduler and nodeclaim metrics carry: six pods that
// fit and one that fits no type are the batch (queue depth and pending 7),
// one of them is unschedulable, the round is timed once, and every claim
// made is counted created (reason provisioning) and launched.
func TestProvisionMetrics(t *testing.T) {
	f := newFixture(t, 6, "1500m")
	f.pendingPod(t, "too-big", "100")
	if err := f.p.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	claims := f.claims(t)
	if len(claims) == 0 {
		t.Fatal("no claims")
	}
	m := f.metrics
	for name, tc := range map[string]struct {
		got  float64
		want float64
	}{
		"nodesmith_scheduler_queue_depth":                         {testutil.ToFloat64(m.QueueDepth), 7},
		"nodesmith_pods_pending":                                  {testutil.ToFloat64(m.PodsPending), 7},
		"nodesmith_pods_unschedulable":                            {testutil.ToFloat64(m.PodsUnschedulable), 1},
		"nodesmith_scheduler_scheduling_duration_seconds_count":   {histogramCount(t, m.SchedulingDuration), 1},
		"nodesmith_nodeclaims_created_total{reason=provisioning}": {testutil.ToFloat64(m.NodeClaimsCreated.WithLabelValues(f.pool.Name, "provisioning")), float64(len(claims))},
		"nodesmith_nodeclaims_launched_total":                     {sumOver(t, m.NodeClaimsLaunched), float64(len(claims))},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", name, tc.got, tc.want)
		}
	}
}

func histogramCount(t *testing.T, h prometheus.Histogram) float64 {
	t.Helper()
	var d dto.Metric
	if err := h.Write(&d); err != nil {
		t.Fatal(err)
	}
	return float64(d.GetHistogram().GetSampleCount())
}

// sumOver adds up every series of a counter vector.
func sumOver(t *testing.T, c *prometheus.CounterVec) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	total := 0.0
	for s := range ch {
		var d dto.Metric
		if err := s.Write(&d); err != nil {
			t.Fatal(err)
		}
		total += d.GetCounter().GetValue()
	}
	return total
}
