package provisioner

import (
	"context"
	"sort"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
)

// A snapshot read from the informers' stores holds the same objects, at the
// same versions, as one listed through the cached client.
func TestSharedSnapshotMatchesListedSnapshot(t *testing.T) {
	f := newFixture(t, 5, "1")
	ctx := context.Background()
	if err := f.p.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range f.claims(t) {
		h.Cached(t, &c)
	}
	node := controllertest.Node("shared-"+f.ns, "aws:///zone-a/i-shared", "4")
	if err := h.Direct.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, node)
	clk := clocktesting.NewFakeClock(time.Now())
	listed, err := state.NewCluster(h.Client, clk, time.Minute).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	shared, err := state.NewCluster(h.Client, clk, time.Minute).ListSharedFrom(state.InformerLister{Cache: h.Mgr.GetCache()}).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []struct {
		name           string
		listed, shared []client.Object
	}{
		{"pods", objs(listed.Pods), objs(shared.Pods)},
		{"nodes", objs(listed.Nodes), objs(shared.Nodes)},
		{"NodeClaims", objs(listed.NodeClaims), objs(shared.NodeClaims)},
	} {
		a, b := versions(kind.listed), versions(kind.shared)
		if len(a) == 0 {
			t.Fatalf("the listed snapshot has no %s", kind.name)
		}
		if len(a) != len(b) {
			t.Fatalf("%s: listed %d, shared %d", kind.name, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Errorf("%s: listed %s, shared %s", kind.name, a[i], b[i])
			}
		}
	}
	if len(shared.PodsByNode) != len(listed.PodsByNode) || len(shared.ClaimByNode) != len(listed.ClaimByNode) {
		t.Errorf("indexes differ: pods by node %d/%d, claims by node %d/%d", len(listed.PodsByNode),
			len(shared.PodsByNode), len(listed.ClaimByNode), len(shared.ClaimByNode))
	}
}

func objs[T any, PT interface {
	*T
	client.Object
}](in []*T) []client.Object {
	out := make([]client.Object, len(in))
	for i, o := range in {
		out[i] = PT(o)
	}
	return out
}

// versions are namespace/name@resourceVersion, sorted.
func versions(in []client.Object) []string {
	out := make([]string, len(in))
	for i, o := range in {
		out[i] = o.GetNamespace() + "/" + o.GetName() + "@" + o.GetResourceVersion()
	}
	sort.Strings(out)
	return out
}
