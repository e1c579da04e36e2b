package provisioner

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

// TestProvisionMetrics reads what one provisioning round reports, the
// figures Karpenter's scheduler and nodeclaim metrics carry: six pods that
// fit and one that fits no type are the batch (queue depth and pending 7),
// one of them is unschedulable, the round is timed once, and every claim
// made is counted created (reason provisioning) and launched.
//
// The API server is shared by the package's tests, and the provisioner
// counts every pending pod it sees, so the pending pods earlier tests left
// are removed first.
func TestProvisionMetrics(t *testing.T) {
	removeUnboundPods(t)
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

// removeUnboundPods deletes every pod not bound to a node and waits until
// the cache no longer holds them.
func removeUnboundPods(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	if err := h.Direct.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Spec.NodeName == "" {
			if err := h.Direct.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var cached corev1.PodList
		if err := h.Client.List(ctx, &cached); err != nil {
			return false, err
		}
		for _, p := range cached.Items {
			if p.Spec.NodeName == "" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("unbound pods still cached: %v", err)
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
	total := 0.0
	for _, d := range controllertest.Series(t, c) {
		total += d.GetCounter().GetValue()
	}
	return total
}
