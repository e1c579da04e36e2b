package nodepool

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

// TestUsageSeriesFollowThePool: a limit taken off a pool takes its
// nodepool_limit series with it, and a deleted pool leaves no usage or limit
// series; another pool's series stay.
func TestUsageSeriesFollowThePool(t *testing.T) {
	ctx := context.Background()
	suffix := fmt.Sprint(time.Now().UnixNano() % 100000)
	m := controllertest.Metrics()
	c := New(h.Client, fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, "us-east-1a")), clock.RealClock{}, m)
	reconcileOK := func(name string) {
		t.Helper()
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	series := func(pool string) (usage, limit int) {
		return seriesOf(t, m.NodePoolUsage, pool), seriesOf(t, m.NodePoolLimit, pool)
	}
	var pools []*nsv1.NodePool
	for _, n := range []string{"gone", "stays"} {
		p := controllertest.NodePool(fmt.Sprintf("metrics-%s-%s", n, suffix))
		p.Spec.Limits = nsv1.Limits{corev1.ResourceCPU: resource.MustParse("100"), corev1.ResourceMemory: resource.MustParse("1Ti")}
		if err := h.Direct.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		h.Cached(t, p)
		reconcileOK(p.Name)
		pools = append(pools, p)
	}
	gone, stays := pools[0], pools[1]
	if u, l := series(gone.Name); u == 0 || l != 2 {
		t.Fatalf("pool %s: %d usage and %d limit series, want some usage and 2 limits", gone.Name, u, l)
	}
	if err := h.Direct.Get(ctx, types.NamespacedName{Name: gone.Name}, gone); err != nil {
		t.Fatal(err)
	}
	gone.Spec.Limits = nsv1.Limits{corev1.ResourceCPU: resource.MustParse("100")}
	if err := h.Direct.Update(ctx, gone); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, gone)
	reconcileOK(gone.Name)
	if testutil.CollectAndCount(m.NodePoolLimit) != 3 {
		t.Errorf("limit series %d after dropping the memory limit, want 3 (cpu of %s, cpu and memory of %s)", testutil.CollectAndCount(m.NodePoolLimit), gone.Name, stays.Name)
	}
	if err := h.Direct.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "the cache drops the deleted pool", func() error {
		err := h.Client.Get(ctx, types.NamespacedName{Name: gone.Name}, &nsv1.NodePool{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get: %v", err)
	})
	reconcileOK(gone.Name)
	if u, l := series(gone.Name); u != 0 || l != 0 {
		t.Errorf("deleted pool %s still has %d usage and %d limit series", gone.Name, u, l)
	}
	if u, l := series(stays.Name); u == 0 || l != 2 {
		t.Errorf("pool %s lost its series: %d usage, %d limit", stays.Name, u, l)
	}
}

// seriesOf counts vec's series labelled nodepool=pool.
func seriesOf(t *testing.T, vec *prometheus.GaugeVec, pool string) int {
	t.Helper()
	n := 0
	for _, d := range controllertest.Series(t, vec) {
		for _, l := range d.GetLabel() {
			if l.GetName() == "nodepool" && l.GetValue() == pool {
				n++
			}
		}
	}
	return n
}
