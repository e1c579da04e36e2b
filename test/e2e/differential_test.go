package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/simulator"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

// differentialTolerance is how far the lab and the simulator may be apart
// on the run's times and on the number of NodeClaims.
const differentialTolerance = 0.15

// diffRun is what one side measured.
type diffRun struct {
	AllRunning time.Duration
	BackToBase time.Duration
	Claims     int
	Families   []string
}

func (r diffRun) String() string {
	return fmt.Sprintf("all pods Running at %s, back to base at %s, %d NodeClaims, families %v",
		r.AllRunning.Round(100*time.Millisecond), r.BackToBase.Round(100*time.Millisecond), r.Claims, r.Families)
}

// differential runs testdata/differential.yaml in the lab and in the
// simulator and holds them to the same NodeClaims, instance families and
// times (all pods Running, back to base) within 15 %.
func differential(t *testing.T) {
	sc, err := scenario.LoadFile(filepath.Join("testdata", "differential.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := simulator.Run(context.Background(), sc, simulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.AllPodsRunning.Reached || !res.BackToBase.Reached {
		t.Fatalf("the simulator did not finish the scenario: all running %v, back to base %v", res.AllPodsRunning, res.BackToBase)
	}
	sim := diffRun{AllRunning: res.AllPodsRunning.At, BackToBase: res.BackToBase.At, Claims: len(res.Launches)}
	for _, l := range res.Launches {
		sim.Families = addFamily(sim.Families, l.InstanceType)
	}

	labRun := runDifferentialInLab(t, sc)
	t.Logf("lab:       %s", labRun)
	t.Logf("simulator: %s", sim)

	near := func(what string, lab, sim float64) {
		if sim == 0 || (lab-sim)/sim > differentialTolerance || (sim-lab)/sim > differentialTolerance {
			t.Errorf("%s: lab %.1f, simulator %.1f: more than %.0f %% apart", what, lab, sim, differentialTolerance*100)
		}
	}
	near("seconds to all pods Running", labRun.AllRunning.Seconds(), sim.AllRunning.Seconds())
	near("seconds to back to base", labRun.BackToBase.Seconds(), sim.BackToBase.Seconds())
	near("NodeClaims launched", float64(labRun.Claims), float64(sim.Claims))
	if strings.Join(labRun.Families, ",") != strings.Join(sim.Families, ",") {
		t.Errorf("instance families: lab %v, simulator %v", labRun.Families, sim.Families)
	}
}

func addFamily(families []string, instanceType string) []string {
	f, _, _ := strings.Cut(instanceType, ".")
	for _, have := range families {
		if have == f {
			return families
		}
	}
	families = append(families, f)
	sort.Strings(families)
	return families
}

// runDifferentialInLab creates the scenario's node class, pool and
// DaemonSet, plays its Deployment's replica steps in real time and measures
// the same milestones as the simulator: all pods Running, and back to base
// (no NodeClaim of the pool and every one of its instances terminated).
func runDifferentialInLab(t *testing.T, sc *scenario.Scenario) diffRun {
	t.Helper()
	if len(sc.NodeClasses) != 1 || len(sc.NodePools) != 1 || len(sc.Deployments) != 1 || len(sc.DaemonSets) != 1 {
		t.Fatal("the differential scenario is one class, one pool, one DaemonSet and one Deployment")
	}
	lab.World.SetBootDelay(sc.World.BootDelay.Duration)
	defer lab.World.SetBootDelay(bootDelay)

	pool := sc.NodePools[0].DeepCopy()
	objs := []client.Object{sc.NodeClasses[0].DeepCopy(), pool, sc.DaemonSets[0].DeepCopy()}
	d := sc.Deployments[0]
	tmpl := d.Template.DeepCopy()
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(d.Replicas[0].Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels},
			Template: *tmpl,
		},
	}
	for _, o := range objs {
		if err := kube().Create(ctx(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	defer func() {
		for _, o := range objs {
			_ = kube().Delete(ctx(), o)
		}
	}()
	start := time.Now()
	if err := kube().Create(ctx(), dep); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = kube().Delete(ctx(), dep) }()

	// The replica steps, in real time from start.
	var wg sync.WaitGroup
	stepErr := make(chan error, len(d.Replicas))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, step := range d.Replicas[1:] {
			time.Sleep(time.Until(start.Add(step.At.Duration)))
			cur := &appsv1.Deployment{}
			if err := kube().Get(ctx(), client.ObjectKeyFromObject(dep), cur); err != nil {
				stepErr <- err
				return
			}
			cur.Spec.Replicas = ptr.To(step.Replicas)
			if err := kube().Update(ctx(), cur); err != nil {
				stepErr <- err
				return
			}
		}
	}()
	defer wg.Wait()

	var run diffRun
	seen := map[string]bool{}
	want := d.Replicas[0].Replicas
	last := d.Replicas[len(d.Replicas)-1].At.Duration
	deadline := start.Add(6 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-stepErr:
			t.Fatalf("playing the replica steps: %v", err)
		default:
		}
		now := time.Since(start)
		if run.AllRunning == 0 {
			if running, _, _ := podsOf(t, d.Name); running == int(want) {
				run.AllRunning = now
				t.Logf("phases of the scale-up, seconds after the Deployment was created:\n%s", phases(t, start, pool.Name, d.Name))
			}
		}
		claims := claimsOf(t, pool.Name)
		for _, c := range claims {
			if !seen[c.Name] {
				seen[c.Name] = true
			}
			if c.Status.InstanceType != "" {
				run.Families = addFamily(run.Families, c.Status.InstanceType)
			}
		}
		if now > last && len(claims) == 0 && len(seen) > 0 && !poolInstancesAlive(pool.Name) {
			run.BackToBase = now
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	run.Claims = len(seen)
	if run.AllRunning == 0 || run.BackToBase == 0 {
		t.Fatalf("the lab did not finish the scenario in time: %s\ncontroller log tail:\n%s", run, lab.controller.Tail(30))
	}
	return run
}

// poolInstancesAlive reports whether any instance of the pool is not yet terminated.
func poolInstancesAlive(pool string) bool {
	for _, in := range lab.World.Instances() {
		if in.Tags[awsv1.TagNodePool] == pool && in.State != "terminated" {
			return true
		}
	}
	return false
}

// phases reads the scale-up's milestones from the objects: when the claims
// were created, launched, registered and initialized, when their Nodes were
// created and turned Ready, and when the pods were bound and Ready (API
// times have one-second resolution).
func phases(t *testing.T, start time.Time, pool, app string) string {
	t.Helper()
	rel := func(ts metav1.Time) string {
		if ts.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%.0f", ts.Sub(start.Truncate(time.Second)).Seconds())
	}
	var b strings.Builder
	for _, c := range claimsOf(t, pool) {
		cond := func(typ string) metav1.Time {
			for _, k := range c.Status.Conditions {
				if k.Type == typ && k.Status == metav1.ConditionTrue {
					return k.LastTransitionTime
				}
			}
			return metav1.Time{}
		}
		fmt.Fprintf(&b, "  claim %s created %s launched %s registered %s initialized %s", c.Name, rel(c.CreationTimestamp),
			rel(cond(nsv1.ConditionLaunched)), rel(cond(nsv1.ConditionRegistered)), rel(cond(nsv1.ConditionInitialized)))
		if c.Status.NodeName != "" {
			n := &corev1.Node{}
			if err := kube().Get(ctx(), client.ObjectKey{Name: c.Status.NodeName}, n); err == nil {
				ready := metav1.Time{}
				for _, k := range n.Status.Conditions {
					if k.Type == corev1.NodeReady && k.Status == corev1.ConditionTrue {
						ready = k.LastTransitionTime
					}
				}
				fmt.Fprintf(&b, "; node created %s ready %s taints %v", rel(n.CreationTimestamp), rel(ready), n.Spec.Taints)
			}
		}
		b.WriteString("\n")
	}
	var pods corev1.PodList
	if err := kube().List(ctx(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	bound, readyAt := map[string]int{}, map[string]int{}
	for _, p := range pods.Items {
		for _, k := range p.Status.Conditions {
			switch {
			case k.Type == corev1.PodScheduled && k.Status == corev1.ConditionTrue:
				bound[rel(k.LastTransitionTime)]++
			case k.Type == corev1.PodReady && k.Status == corev1.ConditionTrue:
				readyAt[rel(k.LastTransitionTime)]++
			}
		}
	}
	fmt.Fprintf(&b, "  pods bound at %v, Ready at %v", bound, readyAt)
	if os.Getenv("NODESMITH_LAB_SCHEDULER_EVENTS") != "" {
		var evs corev1.EventList
		if err := kube().List(ctx(), &evs, client.InNamespace(ns)); err == nil {
			for _, e := range evs.Items {
				if !strings.HasPrefix(e.InvolvedObject.Name, app+"-") {
					continue
				}
				at := e.LastTimestamp.Time
				if !e.EventTime.IsZero() {
					at = e.EventTime.Time
				}
				fmt.Fprintf(&b, "\n  %6.2fs %s x%d %s: %s", at.Sub(start).Seconds(), e.InvolvedObject.Name, e.Count, e.Reason, e.Message)
			}
		}
	}
	return b.String()
}
