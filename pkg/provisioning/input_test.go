package provisioning

import (
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func pendingPod(uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid)}, Status: corev1.PodStatus{
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
}

func boundPod(uid, node string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid)}}
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	return p
}

// claim is a claim of pool; initializedAgo < 0 leaves it in flight
// (unregistered), otherwise it registered as node name+"-node".
func claim(name, pool string, initializedAgo time.Duration) *nsv1.NodeClaim {
	c := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{nsv1.LabelNodePool: pool}}}
	c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	if initializedAgo >= 0 {
		c.Status.NodeName = name + "-node"
		lifecycle.SetCondition(&c.Status.Conditions, lifecycle.Condition(nsv1.ConditionInitialized, true, "", ""), 1, metav1.NewTime(now.Add(-initializedAgo)))
	}
	return c
}

func deleted[T interface{ SetDeletionTimestamp(*metav1.Time) }](o T) T {
	ts := metav1.NewTime(now)
	o.SetDeletionTimestamp(&ts)
	return o
}

func noNominations(types.UID) (string, time.Time, bool) { return "", time.Time{}, false }

// nominations nominates pods to targets (pod → target); those listed in
// expired have a nomination whose TTL ran out a second ago, the rest one
// that runs a minute more.
func nominations(m map[string]string, expired ...string) NominatedFunc {
	return func(uid types.UID) (string, time.Time, bool) {
		t, ok := m[string(uid)]
		expires := now.Add(time.Minute)
		if slices.Contains(expired, string(uid)) {
			expires = now.Add(-time.Second)
		}
		return t, expires, ok
	}
}

func uids(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, string(p.UID))
	}
	sort.Strings(out)
	return out
}

func TestPendingPods(t *testing.T) {
	notProvisionable := pendingPod("not-yet-judged")
	notProvisionable.Status.Conditions = nil
	notProvisionable.CreationTimestamp = metav1.NewTime(now.Add(-time.Second))
	overdue := pendingPod("judged-late")
	overdue.Status.Conditions = nil
	overdue.CreationTimestamp = metav1.NewTime(now.Add(-lifecycle.VerdictWait))
	tests := []struct {
		name       string
		pods       []*corev1.Pod
		claims     []*nsv1.NodeClaim
		nominated  map[string]string
		expired    []string // pods whose nomination's TTL ran out
		wantPods   []string
		wantHeld   map[string][]string
		wantLapsed []string
	}{
		{name: "only unschedulable pods are planned", pods: []*corev1.Pod{pendingPod("a"), boundPod("b", "n1"), notProvisionable},
			wantPods: []string{"a"}},
		{name: "a pod kube-scheduler has not judged in VerdictWait is planned", pods: []*corev1.Pod{notProvisionable, overdue},
			wantPods: []string{"judged-late"}},
		{name: "a pod nominated to a launching claim is held on it", pods: []*corev1.Pod{pendingPod("a"), pendingPod("b")},
			claims: []*nsv1.NodeClaim{claim("c1", "default", -1)}, nominated: map[string]string{"a": "c1"},
			wantPods: []string{"b"}, wantHeld: map[string][]string{"c1": {"a"}}},
		// A thousand claims can take more than the TTL to launch: planning
		// their pods again then would launch the capacity twice. The
		// claim's launch and registration timeouts end the nomination.
		{name: "a pod nominated to a launching claim is held past its TTL", pods: []*corev1.Pod{pendingPod("a")},
			claims: []*nsv1.NodeClaim{claim("c1", "default", -1)}, nominated: map[string]string{"a": "c1"}, expired: []string{"a"},
			wantHeld: map[string][]string{"c1": {"a"}}},
		// A target the snapshot does not show (a claim just created, not in
		// the cache yet; a node that went) holds its pods until the TTL.
		{name: "a pod nominated to a target not in the snapshot is held until its TTL", pods: []*corev1.Pod{pendingPod("a"), pendingPod("b")},
			nominated: map[string]string{"a": "c9", "b": "c9"}, expired: []string{"b"},
			wantPods: []string{"b"}, wantHeld: map[string][]string{"c9": {"a"}}, wantLapsed: []string{"b"}},
		{name: "a pod nominated to a claim ready within the grace is held", pods: []*corev1.Pod{pendingPod("a")},
			claims: []*nsv1.NodeClaim{claim("c1", "default", NominationGrace/2)}, nominated: map[string]string{"a": "c1"},
			wantHeld: map[string][]string{"c1": {"a"}}},
		{name: "a pod nominated to a claim's node ready past the grace lapses and is planned", pods: []*corev1.Pod{pendingPod("a")},
			claims: []*nsv1.NodeClaim{claim("c1", "default", 2*NominationGrace)}, nominated: map[string]string{"a": "c1-node"},
			wantPods: []string{"a"}, wantLapsed: []string{"a"}},
		// kube-scheduler ignores nominations: it filled c1's 4-cpu node with
		// other pods, so "a" (1 cpu) lost its place and is planned at once;
		// "b" (1 cpu) is nominated to c2, whose node keeps 1 cpu free.
		{name: "a pod nominated to a ready node with no room left for it lapses at once",
			pods: []*corev1.Pod{cpuPod(pendingPod("a"), "1"), cpuPod(pendingPod("b"), "1"),
				cpuPod(boundPod("x", "c1-node"), "3500m"), cpuPod(boundPod("y", "c2-node"), "3")},
			claims:    []*nsv1.NodeClaim{claim("c1", "default", time.Second), claim("c2", "default", time.Second)},
			nominated: map[string]string{"a": "c1", "b": "c2"},
			wantPods:  []string{"a"}, wantLapsed: []string{"a"}, wantHeld: map[string][]string{"c2": {"b"}}},
		// c1's node has 1.5 cpu left and both "a" and "b" (1 cpu each) are
		// nominated to it: kube-scheduler filled the rest with pods nominated
		// elsewhere. Only one can still land there; the other lapses, or the
		// solver would count both on the node and miss the slot "b" will
		// really take elsewhere.
		{name: "two pods nominated to a ready node's last free slot: the first is held, the second lapses",
			pods: []*corev1.Pod{cpuPod(pendingPod("a"), "1"), cpuPod(pendingPod("b"), "1"),
				cpuPod(boundPod("x", "c1-node"), "2500m")},
			claims:    []*nsv1.NodeClaim{claim("c1", "default", time.Second)},
			nominated: map[string]string{"a": "c1", "b": "c1-node"},
			wantPods:  []string{"b"}, wantLapsed: []string{"b"}, wantHeld: map[string][]string{"c1": {"a"}}},
		{name: "pods nominated to a launching claim are all held: its room was planned for them",
			pods:   []*corev1.Pod{cpuPod(pendingPod("a"), "1"), cpuPod(pendingPod("b"), "1"), cpuPod(pendingPod("c"), "1")},
			claims: []*nsv1.NodeClaim{claim("c1", "default", -1)}, nominated: map[string]string{"a": "c1", "b": "c1", "c": "c1"},
			wantHeld: map[string][]string{"c1": {"a", "b", "c"}}},
		// An interruption or a disruption marked the target after the pod
		// was nominated to it (or it was deleted): nothing will run the pod
		// there, so it is planned now, not when the nomination runs out.
		{name: "a pod nominated to a launching claim that was deleted lapses at once",
			pods:   []*corev1.Pod{pendingPod("a")},
			claims: []*nsv1.NodeClaim{deleted(claim("c1", "default", -1))}, nominated: map[string]string{"a": "c1"},
			wantPods: []string{"a"}, wantLapsed: []string{"a"}},
		{name: "a pod nominated to the node of a claim marked Disrupting lapses at once, even within the grace",
			pods:      []*corev1.Pod{pendingPod("a"), pendingPod("b")},
			claims:    []*nsv1.NodeClaim{disrupting(claim("c1", "default", time.Second), true), claim("c2", "default", time.Second)},
			nominated: map[string]string{"a": "c1-node", "b": "c2"},
			wantPods:  []string{"a"}, wantLapsed: []string{"a"}, wantHeld: map[string][]string{"c2": {"b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &Snapshot{Pods: tt.pods, NodeClaims: tt.claims, PodsByNode: map[string][]*corev1.Pod{}}
			for _, c := range tt.claims {
				if c.Status.NodeName != "" {
					snap.Nodes = append(snap.Nodes, node(c.Status.NodeName))
				}
			}
			for _, p := range tt.pods {
				if p.Spec.NodeName != "" {
					snap.PodsByNode[p.Spec.NodeName] = append(snap.PodsByNode[p.Spec.NodeName], p)
				}
			}
			got := PendingPods(snap, nominations(tt.nominated, tt.expired...), now)
			if g, w := uids(got.Pods), tt.wantPods; !equal(g, w) {
				t.Errorf("Pods = %v, want %v", g, w)
			}
			if len(got.Held) != len(tt.wantHeld) {
				t.Errorf("Held = %v, want %v", got.Held, tt.wantHeld)
			}
			for target, want := range tt.wantHeld {
				if g := uids(got.Held[target]); !equal(g, want) {
					t.Errorf("Held[%s] = %v, want %v", target, g, want)
				}
			}
			var lapsed []string
			for _, u := range got.Lapsed {
				lapsed = append(lapsed, string(u))
			}
			if !equal(lapsed, tt.wantLapsed) {
				t.Errorf("Lapsed = %v, want %v", lapsed, tt.wantLapsed)
			}
		})
	}
}

func cpuPod(p *corev1.Pod, cpu string) *corev1.Pod {
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
	return p
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func node(name string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Spec:   corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
}

func TestExistingNodes(t *testing.T) {
	registered := claim("reg", "default", time.Minute)
	inFlight := claim("fly", "default", -1)
	inFlight.Spec.Requirements = []nsv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}},
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m7g.large", "c7g.large"}},
	}
	launched := claim("launched", "default", -1)
	launched.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	snap := &Snapshot{
		Nodes:       []*corev1.Node{node("reg-node"), node("tainted", nsv1.DisruptedTaint), deleted(node("going"))},
		NodeClaims:  []*nsv1.NodeClaim{registered, inFlight, launched, deleted(claim("gone", "default", -1))},
		PodsByNode:  map[string][]*corev1.Pod{"reg-node": {boundPod("running", "reg-node")}},
		ClaimByNode: map[string]*nsv1.NodeClaim{"reg-node": registered},
	}
	held := map[string][]*corev1.Pod{"reg": {pendingPod("on-claim")}, "reg-node": {pendingPod("on-node")}, "fly": {pendingPod("on-fly")}}
	got := map[string]*scheduling.ExistingNode{}
	for _, en := range ExistingNodes(snap, held) {
		if got[en.Name] != nil {
			t.Fatalf("%s listed twice", en.Name)
		}
		got[en.Name] = en
	}
	tests := []struct {
		name       string
		node       string
		absent     bool
		pods       []string
		inFlight   bool
		marked     bool
		cpu        string
		wantLabels map[string]string
	}{
		{name: "registered node carries its pods and those held on it or its claim", node: "reg-node",
			pods: []string{"on-claim", "on-node", "running"}, cpu: "4"},
		{name: "registered claim is not listed again", node: "reg", absent: true},
		{name: "disrupted taint marks a node for deletion", node: "tainted", marked: true, cpu: "4"},
		{name: "a deleted node is marked for deletion", node: "going", marked: true, cpu: "4"},
		{name: "in-flight claim is a node sized by its requests, labelled by its pinned requirements", node: "fly",
			pods: []string{"on-fly"}, inFlight: true, cpu: "1",
			wantLabels: map[string]string{corev1.LabelTopologyZone: "us-east-1a", nsv1.LabelNodePool: "default"}},
		{name: "launched in-flight claim is sized by its allocatable", node: "launched", inFlight: true, cpu: "2"},
		{name: "a deleted in-flight claim offers no room", node: "gone", absent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			en := got[tt.node]
			if tt.absent {
				if en != nil {
					t.Fatalf("%s listed, want absent", tt.node)
				}
				return
			}
			if en == nil {
				t.Fatalf("%s not listed", tt.node)
			}
			if g := uids(en.Pods); !equal(g, tt.pods) {
				t.Errorf("pods = %v, want %v", g, tt.pods)
			}
			if en.InFlight != tt.inFlight || en.MarkedForDeletion != tt.marked {
				t.Errorf("inFlight=%v marked=%v, want %v %v", en.InFlight, en.MarkedForDeletion, tt.inFlight, tt.marked)
			}
			if q := en.Allocatable[corev1.ResourceCPU]; q.Cmp(resource.MustParse(tt.cpu)) != 0 {
				t.Errorf("cpu = %s, want %s", q.String(), tt.cpu)
			}
			if tt.wantLabels != nil && len(en.Labels) != len(tt.wantLabels) {
				t.Errorf("labels = %v, want %v", en.Labels, tt.wantLabels)
			}
			for k, v := range tt.wantLabels {
				if en.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, en.Labels[k], v)
				}
			}
		})
	}
}

func pool(name string, mutate ...func(*nsv1.NodePool)) *nsv1.NodePool {
	p := &nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestBuildInputPools(t *testing.T) {
	launched := claim("a1", "a", -1)
	launched.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	notReady := pool("unready", func(p *nsv1.NodePool) {
		p.Status.Conditions = []metav1.Condition{{Type: nsv1.ConditionReady, Status: metav1.ConditionFalse}}
	})
	snap := &Snapshot{
		NodePools:  []*nsv1.NodePool{pool("a"), pool("b"), deleted(pool("deleting")), notReady, pool("no-types")},
		NodeClaims: []*nsv1.NodeClaim{launched, claim("a2", "a", -1), deleted(claim("a3", "a", -1))},
		Pods:       []*corev1.Pod{pendingPod("p")},
	}
	types := map[string][]*catalog.InstanceType{"a": nil, "b": nil, "deleting": nil, "unready": nil}
	opts := scheduling.Options{MaxOptionsPerClaim: DefaultMaxOptionsPerClaim}
	in, byName := BuildInput(snap, PendingPods(snap, noNominations, now), types, opts)
	if len(in.Pods) != 1 || in.Options.MaxOptionsPerClaim != DefaultMaxOptionsPerClaim {
		t.Fatalf("input pods=%d options=%+v", len(in.Pods), in.Options)
	}
	var names []string
	for _, p := range in.NodePools {
		names = append(names, p.Name)
		if p.Labels[nsv1.LabelNodePool] != p.Name {
			t.Errorf("pool %s lacks its nodepool label: %v", p.Name, p.Labels)
		}
	}
	if !equal(names, []string{"a", "b"}) || len(byName) != 2 || byName["a"] == nil {
		t.Fatalf("pools = %v (byName %d), want [a b]: deleting, unready and type-less pools are left out", names, len(byName))
	}
	tests := []struct {
		pool       string
		cpu, nodes int64
	}{
		// a1's launched capacity (8) plus a2's requests (1); a3 is being deleted.
		{pool: "a", cpu: 9, nodes: 2},
		{pool: "b", cpu: 0, nodes: 0},
	}
	for i, tt := range tests {
		u := in.NodePools[i].Usage
		cpu, nodes := u[corev1.ResourceCPU], u[nsv1.ResourceNodes]
		if cpu.Value() != tt.cpu || nodes.Value() != tt.nodes {
			t.Errorf("pool %s usage cpu=%s nodes=%s, want %d and %d", tt.pool, cpu.String(), nodes.String(), tt.cpu, tt.nodes)
		}
	}
}

func TestUsage(t *testing.T) {
	launched := &nsv1.NodeClaim{Status: nsv1.NodeClaimStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	pending := &nsv1.NodeClaim{Spec: nsv1.NodeClaimSpec{Resources: nsv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}}}
	tests := []struct {
		name    string
		claims  []*nsv1.NodeClaim
		wantCPU string
		wantN   int64
	}{
		{name: "none", wantCPU: "0", wantN: 0},
		{name: "launched capacity plus pending requests", claims: []*nsv1.NodeClaim{launched, pending}, wantCPU: "5500m", wantN: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, n := Usage(tt.claims, nil)
			cpu := res[corev1.ResourceCPU]
			if n != tt.wantN || cpu.Cmp(resource.MustParse(tt.wantCPU)) != 0 {
				t.Fatalf("Usage = %s cpu, %d nodes; want %s, %d", cpu.String(), n, tt.wantCPU, tt.wantN)
			}
		})
	}
}

func TestUsageWithTypes(t *testing.T) {
	mk := func(name, cpu string) *catalog.InstanceType {
		return &catalog.InstanceType{Name: name, Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	}
	types := []*catalog.InstanceType{mk("small", "2"), mk("big", "16")}
	launched := &nsv1.NodeClaim{Status: nsv1.NodeClaimStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	inFlight := &nsv1.NodeClaim{Spec: nsv1.NodeClaimSpec{
		Resources:    nsv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}},
		Requirements: []nsv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"small", "big"}}},
	}}
	unknown := &nsv1.NodeClaim{Spec: nsv1.NodeClaimSpec{
		Resources:    nsv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}},
		Requirements: []nsv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"gone"}}},
	}}
	tests := []struct {
		name    string
		claims  []*nsv1.NodeClaim
		wantCPU string
	}{
		{name: "launched capacity", claims: []*nsv1.NodeClaim{launched}, wantCPU: "4"},
		{name: "in flight, no offerings known: its largest instance type", claims: []*nsv1.NodeClaim{launched, inFlight}, wantCPU: "20"},
		{name: "in flight with unknown types: its requests", claims: []*nsv1.NodeClaim{unknown}, wantCPU: "1500m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, n := Usage(tt.claims, types)
			cpu := res[corev1.ResourceCPU]
			if n != int64(len(tt.claims)) || cpu.Cmp(resource.MustParse(tt.wantCPU)) != 0 {
				t.Fatalf("Usage = %s cpu, %d nodes; want %s, %d", cpu.String(), n, tt.wantCPU, len(tt.claims))
			}
		})
	}
}

// Version changes with any object's resourceVersion, with an object more
// or less, and is absent for hand-built objects.
func TestSnapshotVersion(t *testing.T) {
	pod := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
	}
	claim := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "uid-c", ResourceVersion: "7"}}
	snap := func(pods ...*corev1.Pod) *Snapshot {
		return &Snapshot{Pods: pods, NodeClaims: []*nsv1.NodeClaim{claim}}
	}
	base, ok := snap(pod("a", "1"), pod("b", "2")).Version()
	if !ok {
		t.Fatal("a snapshot of stored objects has no version")
	}
	if again, _ := snap(pod("a", "1"), pod("b", "2")).Version(); again != base {
		t.Fatal("the same objects give another version")
	}
	for name, s := range map[string]*Snapshot{
		"a pod written":   snap(pod("a", "1"), pod("b", "3")),
		"a pod gone":      snap(pod("a", "1")),
		"a pod more":      snap(pod("a", "1"), pod("b", "2"), pod("c", "4")),
		"a claim instead": {Pods: []*corev1.Pod{pod("a", "1"), pod("b", "2")}},
		"a PVC written": func() *Snapshot {
			s := snap(pod("a", "1"), pod("b", "2"))
			s.Storage = NewStorage([]*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data", UID: "uid-data", ResourceVersion: "9"}}}, nil, nil)
			return s
		}(),
	} {
		if v, _ := s.Version(); v == base {
			t.Errorf("%s: the version did not change", name)
		}
	}
	if _, ok := snap(pod("a", "")).Version(); ok {
		t.Error("a hand-built object (no resourceVersion) gave the snapshot a version")
	}
}
