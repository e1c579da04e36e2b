package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/labkit"
)

// waitFor polls cond every 250 ms until it returns nil, failing the test
// with cond's last error and the controller's log tail after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := labkit.Poll(timeout, 250*time.Millisecond, cond); err != nil {
		t.Fatalf("%s after %s: %v\ncontroller log tail:\n%s", what, timeout, err, lab.controller.Tail(30))
	}
}

func kube() client.Client { return lab.Env.Client }

func ctx() context.Context { return context.Background() }

// podsOf counts the Deployment's pods by phase.
func podsOf(t testing.TB, app string) (running, pending, total int) {
	t.Helper()
	c, err := labkit.CountPods(ctx(), kube(), ns, map[string]string{"app": app})
	if err != nil {
		t.Fatal(err)
	}
	return c.Running, c.Pending, c.Total
}

func claimsOf(t testing.TB, pool string) []nsv1.NodeClaim {
	t.Helper()
	var list nsv1.NodeClaimList
	if err := kube().List(ctx(), &list, client.MatchingLabels{nsv1.LabelNodePool: pool}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// liveInstances are the simulated instances not terminated or terminating.
func liveInstances() []fakeaws.Instance {
	var out []fakeaws.Instance
	for _, in := range lab.World.Instances() {
		if in.State == "pending" || in.State == "running" {
			out = append(out, in)
		}
	}
	return out
}

func scale(t *testing.T, name string, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := kube().Get(ctx(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = &replicas
	if err := kube().Update(ctx(), d); err != nil {
		t.Fatal(err)
	}
}

func allRunning(t testing.TB, app string, want int) func() error {
	return func() error {
		c, err := labkit.CountPods(ctx(), kube(), ns, map[string]string{"app": app})
		if err != nil {
			t.Fatal(err)
		}
		return c.AllRunning(want)
	}
}

// drained waits until a pool has no claims and no live instance is left.
func drained(t testing.TB, pools ...string) func() error {
	return func() error {
		for _, p := range pools {
			if n := len(claimsOf(t, p)); n > 0 {
				return fmt.Errorf("nodepool %s still has %d nodeclaims", p, n)
			}
		}
		if n := len(liveInstances()); n > 0 {
			return fmt.Errorf("%d instances still live", n)
		}
		var nodes corev1.NodeList
		if err := kube().List(ctx(), &nodes); err != nil {
			return err
		}
		if n := len(nodes.Items) - len(labkit.SystemNodes); n > 0 {
			return fmt.Errorf("%d nodes besides the system nodes still registered", n)
		}
		return nil
	}
}

func cpuOf(claims []nsv1.NodeClaim) resource.Quantity {
	var total resource.Quantity
	for _, c := range claims {
		if q, ok := c.Status.Capacity[corev1.ResourceCPU]; ok {
			total.Add(q)
		}
	}
	return total
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig=" + lab.Env.KubeconfigPath}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func instanceTypes(claims []nsv1.NodeClaim) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range claims {
		if !seen[c.Status.InstanceType] {
			seen[c.Status.InstanceType] = true
			out = append(out, c.Status.InstanceType)
		}
	}
	sort.Strings(out)
	return out
}
