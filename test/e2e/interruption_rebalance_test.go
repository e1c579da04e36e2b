package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// rebalancePods are the pods of the rebalance step's Deployment.
func rebalancePods(t *testing.T) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := kube().List(ctx(), &pods, client.InNamespace(intrNS), client.MatchingLabels{"app": "rebalance"}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// rebalanceRunning: want pods Running, none terminating, none on avoid.
func rebalanceRunning(t *testing.T, want int, avoid string) func() error {
	return func() error {
		running, other := 0, 0
		for _, p := range rebalancePods(t) {
			if p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != avoid {
				running++
			} else {
				other++
			}
		}
		if running != want || other > 0 {
			return fmt.Errorf("%d of %d pods running where wanted, %d others", running, want, other)
		}
		return nil
	}
}

// startRebalancePods runs the step's two small pods on one node of the
// interruption pool and returns its claim.
func startRebalancePods(t *testing.T) (*appsv1.Deployment, nsv1.NodeClaim) {
	t.Helper()
	dep := deployment("rebalance", intrFleet, 2, "500m", "128Mi")
	dep.Namespace = intrNS
	if err := kube().Create(ctx(), dep); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the rebalance pods running", rebalanceRunning(t, 2, ""))
	claims := claimsOf(t, intrPool)
	if len(claims) != 1 {
		t.Fatalf("%d nodeclaims for two small pods, want 1", len(claims))
	}
	return dep, claims[0]
}

// stopRebalancePods deletes the step's pods and waits for the pool and the
// interruption queue to be empty, so the next step starts clean.
func stopRebalancePods(t *testing.T, dep *appsv1.Deployment) {
	t.Helper()
	if err := kube().Delete(ctx(), dep); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 4*time.Minute, "the interruption pool drained", drained(t, intrPool))
	waitFor(t, time.Minute, "the interruption queue empty after clean-up", queueEmpty(labInterruptionQueue))
}

// rebalancePrespin: with the default --rebalance-mode=prespin an EC2
// rebalance recommendation launches the node's replacement at once and
// keeps the node (tainted, its pods running) while no interruption comes;
// the spot warning that follows drains it onto the replacement that was
// prespun, which was Ready before the first eviction, and the instance is
// terminated well before its two-minute deadline.
func rebalancePrespin(t *testing.T) {
	stepStart := time.Now()
	restartController(t) // prespin is the default mode
	defer restoreController(t)
	applyInterruptionPool(t)
	obs := newObserver(t, intrNS)
	dep, victim := startRebalancePods(t)
	node, instance := victim.Status.NodeName, instanceOf(&victim)
	existing := map[string]bool{victim.Name: true}

	recommendedAt := time.Now()
	if err := lab.World.Rebalance(instance); err != nil {
		t.Fatal(err)
	}
	var repl string
	waitFor(t, time.Minute, "the prespun replacement Ready", func() error {
		n := obs.addedAfter(recommendedAt, existing)
		if len(n) != 1 {
			return fmt.Errorf("replacements launched: %v, want one", n)
		}
		repl = n[0]
		if _, ok := obs.at(obs.claimInitialized, repl); !ok {
			return fmt.Errorf("replacement %s not initialized yet", repl)
		}
		return nil
	})
	created, _ := obs.at(obs.claimAdded, repl)
	ready, _ := obs.at(obs.claimInitialized, repl)
	// Held: past the pool's consolidateAfter (5 s), so an empty-looking
	// replacement would have been consolidated away, and the node must
	// still run its pods.
	hold := time.Now().Add(8 * time.Second)
	for time.Now().Before(hold) {
		if _, ok := obs.at(obs.claimDeleting, victim.Name); ok {
			t.Fatalf("prespin drained %s on a rebalance recommendation alone", victim.Name)
		}
		if _, ok := obs.at(obs.claimDeleting, repl); ok {
			t.Fatalf("the prespun replacement %s was deleted while held", repl)
		}
		if err := rebalanceRunning(t, 2, "")(); err != nil {
			t.Fatalf("prespin: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if _, ok := obs.at(obs.claimDisrupting, victim.Name); !ok {
		t.Errorf("nodeclaim %s was not marked Disrupting by the recommendation", victim.Name)
	}
	tainted, okTaint := obs.at(obs.nodeTainted, node)
	if !okTaint {
		t.Errorf("node %s was not tainted by the recommendation", node)
	}

	warnedAt := time.Now()
	if err := lab.World.Interrupt(instance); err != nil {
		t.Fatal(err)
	}
	in, _ := lab.World.Instance(instance)
	deadline := in.InterruptAt
	waitFor(t, fakeaws.InterruptionNotice, "the warned node drained onto the prespun replacement", func() error {
		if _, gone := obs.at(obs.claimGone, victim.Name); !gone {
			return fmt.Errorf("nodeclaim %s still there", victim.Name)
		}
		return rebalanceRunning(t, 2, node)()
	})
	settled := time.Now()
	if n := obs.addedAfter(recommendedAt, existing); len(n) != 1 {
		t.Errorf("claims launched after the recommendation: %v; the warning should use the prespun %s", n, repl)
	}
	var onRepl int
	for _, p := range rebalancePods(t) {
		if c := obs.claimCopy(repl); c != nil && p.Spec.NodeName == c.Status.NodeName {
			onRepl++
		}
	}
	if onRepl != 2 {
		t.Errorf("%d of 2 pods run on the prespun replacement %s", onRepl, repl)
	}
	evicted, _, okEv := obs.firstEviction(node)
	deleting, okDel := obs.at(obs.claimDeleting, victim.Name)
	gone, _ := obs.at(obs.claimGone, victim.Name)
	if !okEv || !okDel {
		t.Fatalf("drain seen %v, eviction seen %v", okDel, okEv)
	}
	if !ready.Before(deleting) || !ready.Before(evicted) {
		t.Errorf("the drain began at %s (first eviction %s) before the replacement %s was ready at %s",
			deleting.Format("15:04:05.000"), evicted.Format("15:04:05.000"), repl, ready.Format("15:04:05.000"))
	}
	after, ok := lab.World.Instance(instance)
	if !ok || (after.State != fakeaws.StateShuttingDown && after.State != fakeaws.StateTerminated) || !after.StateChangedAt.Before(deadline) {
		t.Errorf("instance %s is %q since %s; want terminated before its deadline %s", instance, after.State,
			after.StateChangedAt.Format("15:04:05.000"), deadline.Format("15:04:05.000"))
	}
	t.Logf("rebalance mode prespin: recommendation→taint %s, →replacement %s created %s, →Ready %s; held %s with its pods; warning→drain began %s, →first eviction %s, →claim gone %s, →both pods Running on the replacement %s; instance %s %s at warning+%s (deadline warning+%s)",
		ms(tainted.Sub(recommendedAt)), repl, ms(created.Sub(recommendedAt)), ms(ready.Sub(recommendedAt)), ms(warnedAt.Sub(ready)),
		ms(deleting.Sub(warnedAt)), ms(evicted.Sub(warnedAt)), ms(gone.Sub(warnedAt)), ms(settled.Sub(warnedAt)),
		instance, after.State, ms(after.StateChangedAt.Sub(warnedAt)), ms(deadline.Sub(warnedAt)))

	stopRebalancePods(t, dep)
	t.Logf("step wall time %s", ms(time.Since(stepStart)))
}

// rebalanceModes: an EC2 rebalance recommendation with --rebalance-mode=off
// is an Event and nothing else (no replacement, no taint, no drain); with
// --rebalance-mode=drain the node's replacement is launched and ready
// first, and only then is the node drained.
func rebalanceModes(t *testing.T) {
	stepStart := time.Now()
	defer restoreController(t)
	applyInterruptionPool(t)
	obs := newObserver(t, intrNS)
	dep, victim := startRebalancePods(t)
	node, instance := victim.Status.NodeName, instanceOf(&victim)
	existing := map[string]bool{victim.Name: true}
	names := map[string]bool{victim.Name: true}

	// off: an Event, nothing else.
	addr := restartController(t, "--rebalance-mode=off")
	offAt := time.Now()
	if err := lab.World.Rebalance(instance); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the recommendation recorded as an Event", func() error {
		for _, e := range eventsAbout(t, names, "RebalanceRecommendation") {
			if e.At.After(offAt) && strings.Contains(e.Note, "no action (rebalance mode off)") {
				return queueEmpty(labInterruptionQueue)()
			}
		}
		return fmt.Errorf("no RebalanceRecommendation Event on %s", victim.Name)
	})
	hold := time.Now().Add(5 * time.Second)
	for time.Now().Before(hold) {
		if n := obs.addedAfter(offAt, existing); len(n) > 0 {
			t.Fatalf("rebalance mode off launched %v", n)
		}
		if _, ok := obs.at(obs.claimDisrupting, victim.Name); ok {
			t.Fatalf("rebalance mode off marked %s Disrupting", victim.Name)
		}
		if _, ok := obs.at(obs.nodeTainted, node); ok {
			t.Fatalf("rebalance mode off tainted %s", node)
		}
		if err := rebalanceRunning(t, 2, "")(); err != nil {
			t.Fatalf("rebalance mode off: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	m := scrape(t, addr)
	if n := m.sum("nodesmith_interruption_actions_total", map[string]string{"kind": "rebalance_recommendation", "action": "none"}); n != 1 {
		t.Errorf("rebalance mode off: actions_total{rebalance_recommendation,none} = %v, want 1", n)
	}
	t.Logf("rebalance mode off: an Event on %s and on its node, no replacement, taint or drain in the 5 s after the queue emptied", victim.Name)

	// drain: replacement first, then the drain.
	restartController(t, "--rebalance-mode=drain")
	drainAt := time.Now()
	if err := lab.World.Rebalance(instance); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the rebalanced node replaced and drained", func() error {
		if _, gone := obs.at(obs.claimGone, victim.Name); !gone {
			return fmt.Errorf("nodeclaim %s still there", victim.Name)
		}
		return rebalanceRunning(t, 2, node)()
	})
	repl := obs.addedAfter(drainAt, existing)
	if len(repl) != 1 {
		t.Fatalf("replacements launched: %v, want one", repl)
	}
	created, _ := obs.at(obs.claimAdded, repl[0])
	ready, okReady := obs.at(obs.claimInitialized, repl[0])
	tainted, _ := obs.at(obs.nodeTainted, node)
	deleting, okDel := obs.at(obs.claimDeleting, victim.Name)
	evicted, _, okEv := obs.firstEviction(node)
	gone, _ := obs.at(obs.claimGone, victim.Name)
	if !okReady || !okDel || !okEv {
		t.Fatalf("replacement ready seen %v, drain seen %v, eviction seen %v", okReady, okDel, okEv)
	}
	if !ready.Before(deleting) || !ready.Before(evicted) {
		t.Errorf("the drain began at %s (first eviction %s) before the replacement %s was ready at %s",
			deleting.Format("15:04:05.000"), evicted.Format("15:04:05.000"), repl[0], ready.Format("15:04:05.000"))
	}
	drainEvent := false
	for _, e := range eventsAbout(t, names, "InterruptionDrain") {
		if strings.Contains(e.Note, "rebalance mode drain") {
			drainEvent = true
		}
	}
	if !drainEvent {
		t.Errorf("no InterruptionDrain Event for the rebalance on %s", victim.Name)
	}
	t.Logf("rebalance mode drain: sent→taint %s, →replacement %s created %s, →ready %s, →drain began %s, →first eviction %s, →claim gone %s",
		ms(tainted.Sub(drainAt)), repl[0], ms(created.Sub(drainAt)), ms(ready.Sub(drainAt)), ms(deleting.Sub(drainAt)), ms(evicted.Sub(drainAt)), ms(gone.Sub(drainAt)))

	stopRebalancePods(t, dep)
	t.Logf("step wall time %s", ms(time.Since(stepStart)))
}
