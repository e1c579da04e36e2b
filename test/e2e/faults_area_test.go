package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// applyAreaPool creates an EC2NodeClass and a NodePool both called name,
// copied from the lab's spot fleet, whose nodes carry fleet=name. Only empty
// nodes are consolidated, and only after ten minutes: during a step a claim
// goes only when the step deletes it or AWS interrupts its instance, so any
// other deletion is one the step must report. The pool and class are
// deleted when the test ends (after the step's clean-up has emptied them).
func applyAreaPool(t *testing.T, name string) {
	t.Helper()
	c, p := fleetCopy(t, name, name, name, "10m")
	p.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "100%"}}
	createAreaPool(t, time.Minute, c, p)
}

// cleanUpArea deletes the apps' Deployments, then the pool's claims, and
// waits until no claim, node or live instance is left.
func cleanUpArea(t *testing.T, pool string, apps ...string) {
	t.Helper()
	start := time.Now()
	for _, app := range apps {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app}}
		if err := client.IgnoreNotFound(kube().Delete(ctx(), d)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, time.Minute, "the pods of "+strings.Join(apps, ", ")+" gone", func() error {
		for _, app := range apps {
			if _, _, total := podsOf(t, app); total > 0 {
				return fmt.Errorf("%d pods of %s left", total, app)
			}
		}
		return nil
	})
	for _, c := range claimsOf(t, pool) {
		if err := client.IgnoreNotFound(kube().Delete(ctx(), &c)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Minute, "nodepool "+pool+" drained", drained(t, pool))
	t.Logf("clean-up of %s: %s", strings.Join(apps, ", "), time.Since(start).Round(100*time.Millisecond))
}

// claimLedger follows a pool's NodeClaims and Nodes through a step: which
// claims were seen, whether each ever had an instance, and which nodes
// belonged to them, so a step can tell the claims and nodes that went away
// from those it removed on purpose.
type claimLedger struct {
	pool     string
	launched map[string]bool   // claim -> ever had a provider ID
	nodes    map[string]string // claim -> its node
}

func newClaimLedger(pool string) *claimLedger {
	return &claimLedger{pool: pool, launched: map[string]bool{}, nodes: map[string]string{}}
}

// observe records the pool's claims now. It reads through the lab's
// client and fails the test if the API server does not answer.
func (l *claimLedger) observe(t *testing.T) {
	for _, c := range claimsOf(t, l.pool) {
		l.launched[c.Name] = l.launched[c.Name] || c.Status.ProviderID != ""
		if c.Status.NodeName != "" {
			l.nodes[c.Name] = c.Status.NodeName
		}
	}
}

// gone lists the claims seen that no longer exist, except those in
// expected, split by whether they had launched; and the nodes of seen
// claims (other than expected) that no longer exist.
func (l *claimLedger) gone(t *testing.T, expected map[string]bool) (unlaunched, launched, nodes []string) {
	t.Helper()
	current := map[string]bool{}
	for _, c := range claimsOf(t, l.pool) {
		current[c.Name] = true
	}
	var list corev1.NodeList
	if err := kube().List(ctx(), &list); err != nil {
		t.Fatal(err)
	}
	liveNodes := map[string]bool{}
	for _, n := range list.Items {
		liveNodes[n.Name] = true
	}
	for name, had := range l.launched {
		if current[name] || expected[name] {
			continue
		}
		if had {
			launched = append(launched, name)
		} else {
			unlaunched = append(unlaunched, name)
		}
	}
	for claim, node := range l.nodes {
		if !expected[claim] && !liveNodes[node] {
			nodes = append(nodes, node)
		}
	}
	return unlaunched, launched, nodes
}

// instancesOfClaimsLive fails t for every claim of pool whose instance is
// not running: garbage collection or anything else terminated it under the
// claim.
func instancesOfClaimsLive(t *testing.T, pool string) {
	t.Helper()
	for _, c := range claimsOf(t, pool) {
		if c.Status.ProviderID == "" || !c.DeletionTimestamp.IsZero() {
			continue
		}
		in, ok := lab.World.Instance(instanceOf(&c))
		if !ok || in.State != "running" {
			t.Errorf("nodeclaim %s's instance %s is %q (known %v) while the claim lives", c.Name, instanceOf(&c), in.State, ok)
		}
	}
}

// listPods lists the app's pods in the lab's namespace.
func listPods(t *testing.T, app string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := kube().List(ctx(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}
