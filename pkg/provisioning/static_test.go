package provisioning

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

func staticPool(replicas int64, nodeLimit int64) *nsv1.NodePool {
	return pool("static", func(p *nsv1.NodePool) {
		p.Spec.Replicas = &replicas
		if nodeLimit >= 0 {
			p.Spec.Limits = nsv1.Limits{nsv1.ResourceNodes: *resource.NewQuantity(nodeLimit, resource.DecimalSI)}
		}
	})
}

// inCommand marks c a candidate of a disruption command whose replacements
// are named repl.
func inCommand(c *nsv1.NodeClaim, repl ...string) *nsv1.NodeClaim {
	c.Annotations = map[string]string{nsv1.AnnotationDisruptionCommand: "cmd-1", nsv1.AnnotationDisruptionReplacements: strings.Join(repl, ",")}
	return c
}

func created(c *nsv1.NodeClaim, ago time.Duration) *nsv1.NodeClaim {
	c.CreationTimestamp = metav1.NewTime(now.Add(-ago))
	return c
}

func TestStaticPlan(t *testing.T) {
	busy := map[string][]*corev1.Pod{
		"s1-node": {boundPod("a", "s1-node"), boundPod("b", "s1-node")},
		"s2-node": {boundPod("c", "s2-node")},
	}
	tests := []struct {
		name       string
		pool       *nsv1.NodePool
		claims     []*nsv1.NodeClaim
		pods       map[string][]*corev1.Pod
		wantLaunch int
		wantDelete []string
		wantCount  int
		wantStatus metav1.ConditionStatus
		wantReason string
		wantLimit  bool
	}{
		{name: "empty pool launches every replica", pool: staticPool(3, -1),
			wantLaunch: 3, wantStatus: metav1.ConditionFalse, wantReason: "ScalingUp"},
		{name: "at replicas does nothing", pool: staticPool(2, -1),
			claims:    []*nsv1.NodeClaim{claim("s1", "static", time.Hour), claim("s2", "static", -1)},
			wantCount: 2, wantStatus: metav1.ConditionTrue},
		{name: "claims of other pools and deleted claims do not count", pool: staticPool(2, -1),
			claims:     []*nsv1.NodeClaim{claim("s1", "static", time.Hour), deleted(claim("s2", "static", time.Hour)), claim("o1", "other", time.Hour)},
			wantLaunch: 1, wantCount: 1, wantStatus: metav1.ConditionFalse, wantReason: "ScalingUp"},
		{name: "limits.nodes below replicas caps the launches and says so", pool: staticPool(5, 3),
			claims:     []*nsv1.NodeClaim{claim("s1", "static", time.Hour)},
			wantLaunch: 2, wantCount: 1, wantStatus: metav1.ConditionFalse, wantReason: "NodeLimitExceeded", wantLimit: true},
		{name: "limits.nodes reached by claims being deleted", pool: staticPool(2, 2),
			claims:    []*nsv1.NodeClaim{claim("s1", "static", time.Hour), inCommand(claim("s2", "static", time.Hour), "s3"), claim("s3", "static", -1)},
			wantCount: 2, wantStatus: metav1.ConditionTrue},
		{name: "a candidate whose replacement exists stops counting", pool: staticPool(2, 3),
			claims:    []*nsv1.NodeClaim{claim("s1", "static", time.Hour), inCommand(claim("s2", "static", time.Hour), "s3"), claim("s3", "static", -1)},
			wantCount: 2, wantStatus: metav1.ConditionTrue},
		{name: "a candidate counts until its replacement exists", pool: staticPool(2, 3),
			claims:    []*nsv1.NodeClaim{claim("s1", "static", time.Hour), inCommand(claim("s2", "static", time.Hour), "s3")},
			wantCount: 2, wantStatus: metav1.ConditionTrue},
		{name: "a replacement in another pool does not stand in", pool: staticPool(2, -1),
			claims:    []*nsv1.NodeClaim{claim("s1", "static", time.Hour), inCommand(claim("s2", "static", time.Hour), "o1"), claim("o1", "other", -1)},
			wantCount: 2, wantStatus: metav1.ConditionTrue},
		{name: "no room under limits.nodes while one launches", pool: staticPool(3, 2),
			claims:    []*nsv1.NodeClaim{claim("s1", "static", time.Hour), inCommand(claim("s2", "static", time.Hour), "s3"), claim("s3", "static", -1)},
			wantCount: 2, wantStatus: metav1.ConditionFalse, wantReason: "NodeLimitExceeded", wantLimit: true},
		{name: "scale down takes unlaunched claims, then the emptiest, newest nodes", pool: staticPool(1, -1),
			claims: []*nsv1.NodeClaim{
				created(claim("s1", "static", time.Hour), 3*time.Hour), created(claim("s2", "static", time.Hour), 2*time.Hour),
				created(claim("s3", "static", time.Hour), 4*time.Hour), created(claim("s4", "static", time.Hour), time.Hour),
				claim("s5", "static", -1),
			},
			pods:       busy,
			wantDelete: []string{"s5", "s4", "s3", "s2"}, wantCount: 5, wantStatus: metav1.ConditionFalse, wantReason: "ScalingDown"},
		{name: "scale down never takes a claim in a command", pool: staticPool(1, -1),
			claims:     []*nsv1.NodeClaim{claim("s1", "static", time.Hour), inCommand(claim("s2", "static", time.Hour))},
			wantDelete: []string{"s1"}, wantCount: 2, wantStatus: metav1.ConditionFalse, wantReason: "ScalingDown"},
		{name: "zero replicas removes them all", pool: staticPool(0, -1),
			claims:     []*nsv1.NodeClaim{claim("s1", "static", time.Hour)},
			wantDelete: []string{"s1"}, wantCount: 1, wantStatus: metav1.ConditionFalse, wantReason: "ScalingDown"},
		{name: "a dynamic pool is no static pool", pool: pool("static"), claims: []*nsv1.NodeClaim{claim("s1", "static", time.Hour)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := StaticPlan(StaticInput{Pool: tt.pool, Claims: tt.claims, PodsByNode: tt.pods})
			var del []string
			for _, c := range d.Delete {
				del = append(del, c.Name)
			}
			if d.Launch != tt.wantLaunch || !equal(del, tt.wantDelete) || d.Counted != tt.wantCount {
				t.Errorf("launch %d delete %v counted %d, want %d %v %d", d.Launch, del, d.Counted, tt.wantLaunch, tt.wantDelete, tt.wantCount)
			}
			if tt.pool.IsStatic() && (d.Condition.Type != nsv1.ConditionReplicasSatisfied || d.Condition.Status != tt.wantStatus ||
				(tt.wantReason != "" && d.Condition.Reason != tt.wantReason)) {
				t.Errorf("condition %+v, want %s %s", d.Condition, tt.wantStatus, tt.wantReason)
			}
			if (d.NodeLimit != "") != tt.wantLimit {
				t.Errorf("node limit message %q, want one: %v", d.NodeLimit, tt.wantLimit)
			}
		})
	}
}

func TestStaticClaim(t *testing.T) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := staticPool(2, -1)
	p.Spec.Template.Spec.Requirements = []nsv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m6i.large"}},
		{Key: nsv1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{nsv1.CapacityTypeOnDemand}},
	}
	p.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	cp, err := StaticClaim(p, cat.Types(), nil, scheduling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Pods) != 0 || cp.NodePool != "static" || len(cp.Options) == 0 {
		t.Fatalf("claim %+v: want no pods, pool static, options", cp)
	}
	for _, o := range cp.Options {
		if n := o.InstanceType.Name; (n != "m5.large" && n != "m6i.large") || o.CapacityType != nsv1.CapacityTypeOnDemand {
			t.Errorf("option %s %s is outside the pool's requirements", n, o.CapacityType)
		}
	}
	if len(cp.Taints) != 1 || cp.Taints[0].Key != "dedicated" {
		t.Errorf("taints %v, want the pool's", cp.Taints)
	}
	p.Spec.Template.Spec.Requirements[0].Values = []string{"no-such-type"}
	if _, err := StaticClaim(p, cat.Types(), nil, scheduling.Options{}); err == nil || !strings.Contains(err.Error(), "static nodepool static can launch no node") {
		t.Errorf("a pool no type fits: err %v", err)
	}
}

// Pending pods never launch into a static pool: the solver is not offered it.
func TestBuildInputLeavesStaticPoolsOut(t *testing.T) {
	snap := &Snapshot{NodePools: []*nsv1.NodePool{pool("dynamic"), staticPool(2, -1)}, Pods: []*corev1.Pod{pendingPod("p")}}
	types := map[string][]*catalog.InstanceType{"dynamic": nil, "static": nil}
	in, byName := BuildInput(snap, PendingPods(snap, noNominations, now), types, scheduling.Options{})
	if len(in.NodePools) != 1 || in.NodePools[0].Name != "dynamic" || byName["static"] != nil {
		t.Fatalf("pools %v, want only the dynamic one", in.NodePools)
	}
}
