package e2e

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// judgeRackKey is a label no well-known key knows: the judge's rack pool
// defines it only through a requirement with two values.
const judgeRackKey = "judge.example.com/rack"

// judgeShape is one topology rule or affinity shape of docs/conformance.md
// put to kube-scheduler: a pool of its own (the pods select its fleet
// label, so no other step's nodes count in its domains), a Deployment, and
// how many of its pods Nodesmith should leave Pending.
type judgeShape struct {
	name     string
	replicas int32
	// pool adjusts the shape's NodePool (a copy of the spot fleet's, large
	// and xlarge sizes).
	pool func(*nsv1.NodePool)
	// pod adds the rule to the pod template.
	pod func(*corev1.PodSpec, map[string]string)
	// pending is how many pods can never run.
	pending int
}

func spreadOn(key string, skew int32) func(*corev1.PodSpec, map[string]string) {
	return func(s *corev1.PodSpec, labels map[string]string) {
		s.TopologySpreadConstraints = append(s.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: skew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: labels}})
	}
}

func bothCapacityTypes(p *nsv1.NodePool) {
	for i, r := range p.Spec.Template.Spec.Requirements {
		if r.Key == nsv1.LabelCapacityType {
			p.Spec.Template.Spec.Requirements[i].Values = []string{nsv1.CapacityTypeSpot, nsv1.CapacityTypeOnDemand}
		}
	}
}

func affinityTerm(key string, labels map[string]string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}
}

// judgeShapes are the shapes of the conformance matrix's topology rows.
var judgeShapes = []judgeShape{
	{name: "zone-spread", replicas: 9, pod: spreadOn(corev1.LabelTopologyZone, 1)},
	{name: "hostname-spread", replicas: 6, pod: spreadOn(corev1.LabelHostname, 1)},
	{name: "capacity-type-spread", replicas: 6, pool: bothCapacityTypes, pod: spreadOn(nsv1.LabelCapacityType, 1)},
	{name: "rack-spread", replicas: 6, pool: func(p *nsv1.NodePool) {
		p.Spec.Template.Spec.Requirements = append(p.Spec.Template.Spec.Requirements, nsv1.NodeSelectorRequirementWithMinValues{
			Key: judgeRackKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"r1", "r2"}})
	}, pod: spreadOn(judgeRackKey, 1)},
	{name: "zone-min-domains", replicas: 3, pod: func(s *corev1.PodSpec, labels map[string]string) {
		spreadOn(corev1.LabelTopologyZone, 1)(s, labels)
		s.TopologySpreadConstraints[0].MinDomains = ptr.To(int32(3))
	}},
	{name: "zone-spread-honours-affinity", replicas: 6, pod: func(s *corev1.PodSpec, labels map[string]string) {
		spreadOn(corev1.LabelTopologyZone, 1)(s, labels)
		s.TopologySpreadConstraints[0].NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{labRegion + "a", labRegion + "b"}}}}}}}}
	}},
	{name: "zone-spread-match-label-keys", replicas: 6, pod: func(s *corev1.PodSpec, labels map[string]string) {
		spreadOn(corev1.LabelTopologyZone, 1)(s, labels)
		s.TopologySpreadConstraints[0].MatchLabelKeys = []string{appsv1.DefaultDeploymentUniqueLabelKey}
	}},
	{name: "zone-self-affinity", replicas: 4, pod: func(s *corev1.PodSpec, labels map[string]string) {
		s.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{affinityTerm(corev1.LabelTopologyZone, labels)}}}
	}},
	{name: "hostname-anti-affinity", replicas: 4, pod: func(s *corev1.PodSpec, labels map[string]string) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{affinityTerm(corev1.LabelHostname, labels)}}}
	}},
	{name: "capacity-type-anti-affinity", replicas: 2, pool: bothCapacityTypes, pod: func(s *corev1.PodSpec, labels map[string]string) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{affinityTerm(nsv1.LabelCapacityType, labels)}}}
	}},
	// Three pods that must each have a node of their own, in a pool that
	// may have two nodes: one can never run.
	{name: "anti-affinity-over-node-limit", replicas: 3, pending: 1, pool: func(p *nsv1.NodePool) {
		p.Spec.Limits = nsv1.Limits{nsv1.ResourceNodes: resource.MustParse("2")}
	}, pod: func(s *corev1.PodSpec, labels map[string]string) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{affinityTerm(corev1.LabelHostname, labels)}}}
	}},
}

// kubeSchedulerJudgesTopology (issue 23, item 3) puts every topology key
// and affinity shape of the conformance matrix to the real kube-scheduler
// on the nodes Nodesmith's plan launched: every pod Nodesmith placed must
// bind and run, and every pod it left Pending must be one kube-scheduler
// cannot place either (its PodScheduled condition Unschedulable on the
// same nodes) and one the shape says can never run. The shapes run side by
// side, each in a pool of its own.
func kubeSchedulerJudgesTopology(t *testing.T) {
	const judgeNS = "judge"
	if err := kube().Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: judgeNS}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	var pools []string
	for _, sh := range judgeShapes {
		name := "judge-" + sh.name
		pools = append(pools, name)
		c, p := fleetCopy(t, name, name, name, "5s", "large", "xlarge")
		if sh.pool != nil {
			sh.pool(p)
		}
		createAreaPool(t, 3*time.Minute, c, p)
	}
	start := time.Now()
	for _, sh := range judgeShapes {
		name := "judge-" + sh.name
		d := deployment(name, name, sh.replicas, "250m", "128Mi")
		d.Namespace = judgeNS
		sh.pod(&d.Spec.Template.Spec, d.Spec.Template.Labels)
		if err := kube().Create(ctx(), d); err != nil {
			t.Fatalf("creating Deployment %s: %v", name, err)
		}
	}
	t.Cleanup(func() {
		for _, sh := range judgeShapes {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: judgeNS, Name: "judge-" + sh.name}}
			_ = client.IgnoreNotFound(kube().Delete(ctx(), d))
		}
	})

	// Settled: every shape has as many pods Running as it should and as
	// many Pending as it must, and no claim was made for 15 s.
	lastClaims, stableSince := -1, time.Now()
	var mu sync.Mutex
	waitFor(t, 4*time.Minute, "every shape's pods bound by kube-scheduler", func() error {
		mu.Lock()
		defer mu.Unlock()
		claims := 0
		for _, p := range pools {
			claims += len(claimsOf(t, p))
		}
		if claims != lastClaims {
			lastClaims, stableSince = claims, time.Now()
		}
		var short []string
		for _, sh := range judgeShapes {
			running, pending := judgePods(t, judgeNS, sh)
			if want := int(sh.replicas) - sh.pending; len(running) != want {
				short = append(short, fmt.Sprintf("%s %d/%d running", sh.name, len(running), want))
			}
			// Nodesmith gives up a nomination kube-scheduler did not follow
			// NominationGrace after the node is ready, then says why.
			if n := len(eventsAbout(t, setOf(names(pending)), "FailedProvisioning")); sh.pending > 0 && n < len(pending) {
				short = append(short, fmt.Sprintf("%s: Nodesmith explained %d of %d pending pods", sh.name, n, len(pending)))
			}
		}
		if len(short) > 0 {
			return fmt.Errorf("%s", strings.Join(short, ", "))
		}
		if time.Since(stableSince) < 15*time.Second {
			return fmt.Errorf("%d nodeclaims, changed %s ago", claims, time.Since(stableSince).Round(time.Second))
		}
		return nil
	})
	t.Logf("all shapes settled %s after their Deployments, %d nodeclaims", time.Since(start).Round(time.Second), lastClaims)

	// The pods left Pending: Nodesmith said why, and kube-scheduler agrees
	// none fits the nodes there are.
	for _, sh := range judgeShapes {
		running, pending := judgePods(t, judgeNS, sh)
		if len(pending) != sh.pending {
			t.Errorf("%s: %d pods pending (%v), want %d", sh.name, len(pending), names(pending), sh.pending)
			continue
		}
		nodes := map[string]bool{}
		for _, p := range running {
			nodes[p.Spec.NodeName] = true
		}
		if len(pending) == 0 {
			t.Logf("%s: %d pods on %d nodes", sh.name, len(running), len(nodes))
			continue
		}
		said := map[string]string{}
		for _, e := range eventsAbout(t, setOf(names(pending)), "FailedProvisioning") {
			said[e.Name] = e.Note
		}
		for _, p := range pending {
			if said[p.Name] == "" {
				t.Errorf("%s: pod %s is Pending and Nodesmith published no FailedProvisioning Event about it", sh.name, p.Name)
			}
			var sched *corev1.PodCondition
			for i := range p.Status.Conditions {
				if p.Status.Conditions[i].Type == corev1.PodScheduled {
					sched = &p.Status.Conditions[i]
				}
			}
			if sched == nil || sched.Status != corev1.ConditionFalse || sched.Reason != corev1.PodReasonUnschedulable {
				t.Errorf("%s: pod %s is Pending but kube-scheduler has not found it unschedulable (%+v): it could have been placed", sh.name, p.Name, sched)
				continue
			}
			t.Logf("%s: pod %s Pending; Nodesmith: %q; kube-scheduler: %q", sh.name, p.Name, said[p.Name], sched.Message)
		}
	}
	t.Run("hostname anti-affinity pods have a node each", func(t *testing.T) {
		for _, sh := range judgeShapes {
			if !strings.Contains(sh.name, "anti-affinity") {
				continue
			}
			running, _ := judgePods(t, judgeNS, sh)
			seen := map[string]string{}
			for _, p := range running {
				key := p.Spec.NodeName
				if sh.name == "capacity-type-anti-affinity" {
					n := &corev1.Node{}
					if err := kube().Get(ctx(), client.ObjectKey{Name: p.Spec.NodeName}, n); err != nil {
						t.Fatal(err)
					}
					key = n.Labels[nsv1.LabelCapacityType]
				}
				if other, ok := seen[key]; ok {
					t.Errorf("%s: pods %s and %s share %s", sh.name, other, p.Name, key)
				}
				seen[key] = p.Name
			}
		}
	})
}

// judgePods are a shape's pods not being deleted, running and pending, by name.
func judgePods(t testing.TB, namespace string, sh judgeShape) (running, pending []corev1.Pod) {
	t.Helper()
	var pods corev1.PodList
	if err := kube().List(ctx(), &pods, client.InNamespace(namespace), client.MatchingLabels{"app": "judge-" + sh.name}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			running = append(running, p)
		case corev1.PodPending:
			pending = append(pending, p)
		}
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].Name < pending[j].Name })
	return running, pending
}

func names(pods []corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func setOf(ss []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	return m
}
