package simulator

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodesmith/nodesmith/pkg/simulator/apiserver"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

// runWatching runs a scenario with watch registered on the API server
// before anything happens, and returns the finished run.
func runWatching(t *testing.T, sc *scenario.Scenario, watch func(s *Sim, ch apiserver.Change)) *Sim {
	t.Helper()
	s := &Sim{ctx: log.IntoContext(context.Background(), logr.Discard()), sc: sc, seed: sc.Seed, clock: clocktesting.NewFakeClock(Epoch),
		pods: map[types.UID]*pod{}, queues: map[string]*simQueue{}, failures: map[string]int{}}
	if err := s.setupAWS(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.server.Close)
	if err := s.setupKube(); err != nil {
		t.Fatal(err)
	}
	s.api.Watch(func(ch apiserver.Change) { watch(s, ch) })
	if err := s.populate(); err != nil {
		t.Fatal(err)
	}
	s.loop()
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s
}

func healthyPod(p *corev1.Pod) bool { return p.DeletionTimestamp == nil && podReady(p) }

// Five web pods behind a PDB of maxUnavailable 1 sit on a node that is
// deleted at t=2m: the drain evicts them one at a time, each only after the
// previous one's replacement runs, so at least four are healthy from the
// moment all five first were until the end.
func TestDrainRespectsPDB(t *testing.T) {
	sc := loadExample(t, "pdb-drain.yaml")
	healthy := map[types.UID]bool{}
	minHealthy, full := 99, false
	evictions := 0
	s := runWatching(t, sc, func(s *Sim, ch apiserver.Change) {
		p, ok := ch.Object().(*corev1.Pod)
		if !ok || p.Labels["app"] != "web" {
			return
		}
		if ch.Old != nil && ch.New != nil && ch.Old.GetDeletionTimestamp() == nil && p.DeletionTimestamp != nil {
			evictions++
		}
		healthy[p.UID] = ch.New != nil && healthyPod(p)
		n := 0
		for _, h := range healthy {
			if h {
				n++
			}
		}
		if n == 5 {
			full = true
		}
		if full {
			minHealthy = min(minHealthy, n)
		}
	})
	if !full {
		t.Fatal("the five web pods never ran together")
	}
	if minHealthy < 4 {
		t.Errorf("%d web pods were healthy at one point during the drain; the PDB allows one down at a time", minHealthy)
	}
	if evictions != 5 {
		t.Errorf("%d web pods were evicted, want the 5 on the deleted node", evictions)
	}
	res := s.result()
	first := res.Launches[0]
	if !first.Terminated || first.Reason != "deleted" {
		t.Fatalf("the deleted node's instance: terminated %v, reason %q", first.Terminated, first.Reason)
	}
	// Each eviction waits for the previous replacement: launch, boot (40s)
	// and start (2s); five of them take minutes, not seconds.
	if d := first.TerminatedAt - 2*time.Minute; d < 3*time.Minute {
		t.Errorf("the drain took %s; five evictions that each wait for a replacement node take longer", d)
	}
}

// Without a PDB, a pod that needs ten minutes to stop on a 90s grace
// period holds its node for those 90 seconds, then the kubelet kills it and
// the instance is terminated.
func TestGracePeriodDelaysTermination(t *testing.T) {
	sc := loadExample(t, "pdb-drain.yaml")
	sc.PodDisruptionBudgets = nil
	sc.Deployments = sc.Deployments[1:] // the batch pod alone
	if sc.Deployments[0].Name != "batch" {
		t.Fatalf("scenario changed: %s", sc.Deployments[0].Name)
	}
	var deletedAt, goneAt time.Duration
	s := runWatching(t, sc, func(s *Sim, ch apiserver.Change) {
		p, ok := ch.Object().(*corev1.Pod)
		if !ok || p.Labels["app"] != "batch" || ch.Old == nil {
			return
		}
		if ch.Old.GetDeletionTimestamp() == nil && ch.New != nil && p.DeletionTimestamp != nil {
			deletedAt = s.now
		}
		if ch.New == nil && deletedAt > 0 && goneAt == 0 {
			goneAt = s.now
		}
	})
	within(t, "batch pod killed after its eviction", goneAt-deletedAt, 90*time.Second, 90*time.Second)
	first := s.result().Launches[0]
	within(t, "instance terminated after the node's deletion", first.TerminatedAt-2*time.Minute, 90*time.Second, 100*time.Second)
}

// The disruption controller keeps the drained budget's status current:
// each eviction shows in disruptedPods until the pod is seen deleting,
// and once the five web pods run again elsewhere the status is back to
// five expected, five healthy, four needed, one disruption allowed.
func TestBudgetStatusKeptCurrent(t *testing.T) {
	sc := loadExample(t, "pdb-drain.yaml")
	evictionsSeen, writes := 0, 0
	s := runWatching(t, sc, func(s *Sim, ch apiserver.Change) {
		pdb, ok := ch.New.(*policyv1.PodDisruptionBudget)
		if !ok || ch.Old == nil {
			return
		}
		writes++
		old := ch.Old.(*policyv1.PodDisruptionBudget)
		for name := range pdb.Status.DisruptedPods {
			if _, was := old.Status.DisruptedPods[name]; !was {
				evictionsSeen++
			}
		}
	})
	if evictionsSeen != 5 {
		t.Errorf("%d evictions recorded in disruptedPods, want the 5 web pods", evictionsSeen)
	}
	pdb := &policyv1.PodDisruptionBudget{}
	if err := s.kube.Get(s.ctx, types.NamespacedName{Namespace: "default", Name: "web"}, pdb); err != nil {
		t.Fatal(err)
	}
	st := pdb.Status
	got := [4]int32{st.ExpectedPods, st.CurrentHealthy, st.DesiredHealthy, st.DisruptionsAllowed}
	if want := [4]int32{5, 5, 4, 1}; got != want || st.ObservedGeneration != pdb.Generation || len(st.DisruptedPods) != 0 {
		t.Errorf("final status %+v (expected, healthy, desired, allowed %v), want %v at generation %d with no disrupted pods", st, got, want, pdb.Generation)
	}
	if c := meta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("DisruptionAllowed %+v, want True", c)
	}
	t.Logf("%d status writes over the run", writes)
}
