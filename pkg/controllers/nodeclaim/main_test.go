package nodeclaim

import (
	"context"
	"fmt"
	"k8s.io/client-go/tools/events"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

// fixture is one controller over a fresh fake cloud and a fake clock.
type fixture struct {
	c        *Controller
	cloud    *fake.CloudProvider
	clk      *clocktesting.FakeClock
	cluster  *state.Cluster
	replayed []types.UID
	events   *events.FakeRecorder
	metrics  *metrics.Metrics
}

func newFixture() *fixture {
	f := &fixture{
		cloud: fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, "zone-a"), fake.InstanceType("m5.xlarge", 4, 16, 0.192, "zone-a")),
		clk:   clocktesting.NewFakeClock(time.Now()),
	}
	f.cluster = state.NewCluster(h.Client, f.clk, time.Minute)
	rec, fr := controllertest.Recorder(f.clk)
	f.events = fr
	f.metrics = controllertest.Metrics()
	f.c = New(h.Client, f.cloud, f.cluster, f.clk, rec, f.metrics, Options{
		Timeouts: lifecycle.Timeouts{Launch: 5 * time.Minute, Registration: 15 * time.Minute},
		Replan:   func(p []types.UID) { f.replayed = append(f.replayed, p...) },
	})
	return f
}

// create makes claim and waits until the cache has it.
func create(t *testing.T, claim *nsv1.NodeClaim) *nsv1.NodeClaim {
	t.Helper()
	if err := h.Direct.Create(context.Background(), claim); err != nil {
		t.Fatalf("creating nodeclaim: %v", err)
	}
	h.Cached(t, claim)
	return claim
}

// reconcile runs one Reconcile and then waits until the cache reflects the
// claim as the apiserver has it.
func (f *fixture) reconcile(t *testing.T, name string) (reconcile.Result, error) {
	t.Helper()
	res, err := f.c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	latest := &nsv1.NodeClaim{}
	if gerr := h.Direct.Get(context.Background(), types.NamespacedName{Name: name}, latest); gerr == nil {
		h.Cached(t, latest)
	}
	return res, err
}

func get(t *testing.T, name string) *nsv1.NodeClaim {
	t.Helper()
	claim := &nsv1.NodeClaim{}
	if err := h.Direct.Get(context.Background(), types.NamespacedName{Name: name}, claim); err != nil {
		t.Fatalf("getting nodeclaim %s: %v", name, err)
	}
	return claim
}

var seq int

func uniq(prefix string) string {
	seq++
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%100000, seq)
}
