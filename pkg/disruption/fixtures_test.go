package disruption

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

var zones = []string{"zone-a", "zone-b"}

// itype is an instance type with cpu vCPUs and 4 GiB per vCPU, on-demand
// at odPrice and spot at spotPrice (none when 0) in every test zone;
// allocatable is capacity minus 100m cpu.
func itype(name string, cpu int64, odPrice, spotPrice float64) *catalog.InstanceType {
	it := &catalog.InstanceType{
		Name: name, Arch: "amd64", VCPU: int(cpu), MemoryMiB: 4 * 1024 * cpu, OnDemandPrice: odPrice,
		Labels: map[string]string{corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(4*cpu<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		},
		Overhead: catalog.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
	}
	for _, z := range zones {
		it.Offerings = append(it.Offerings, catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeOnDemand, Price: odPrice, Available: true})
		if spotPrice > 0 {
			it.Offerings = append(it.Offerings, catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeSpot, Price: spotPrice, Available: true})
		}
	}
	return it
}

// catalogTypes: small 2 cpu, medium 4, large 8, on-demand $0.05 per vCPU,
// no spot (so consolidation tests are not spot-to-spot unless they ask).
func catalogTypes() []*catalog.InstanceType {
	return []*catalog.InstanceType{
		itype("small", 2, 0.10, 0), itype("medium", 4, 0.20, 0), itype("large", 8, 0.40, 0),
	}
}

type poolOpt func(*nsv1.NodePool)

func pool(name string, opts ...poolOpt) *nsv1.NodePool {
	p := &nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	p.Spec.Template.Spec.NodeClassRef = &nsv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	p.Spec.Disruption.ConsolidationPolicy = nsv1.ConsolidationPolicyWhenEmptyOrUnderutilized
	p.Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration("0s")
	p.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "100%"}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func budgets(b ...nsv1.Budget) poolOpt {
	return func(p *nsv1.NodePool) { p.Spec.Disruption.Budgets = b }
}
func consolidateAfter(s string) poolOpt {
	return func(p *nsv1.NodePool) { p.Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration(s) }
}
func policy(pol nsv1.ConsolidationPolicy) poolOpt {
	return func(p *nsv1.NodePool) { p.Spec.Disruption.ConsolidationPolicy = pol }
}

// world builds a snapshot.
type world struct {
	snap    *provisioning.Snapshot
	types   map[string][]*catalog.InstanceType
	classes map[string]*awsv1.EC2NodeClass
	pools   map[string]*nsv1.NodePool
	seq     int
	// claims and volumes back pods' volumes (withVolume).
	claims  []*corev1.PersistentVolumeClaim
	volumes []*corev1.PersistentVolume
}

func newWorld(pools ...*nsv1.NodePool) *world {
	w := &world{
		snap:    &provisioning.Snapshot{PodsByNode: map[string][]*corev1.Pod{}, NodeByID: map[string]*corev1.Node{}, ClaimByNode: map[string]*nsv1.NodeClaim{}},
		types:   map[string][]*catalog.InstanceType{},
		classes: map[string]*awsv1.EC2NodeClass{"default": nodeClass()},
		pools:   map[string]*nsv1.NodePool{},
	}
	for _, p := range pools {
		w.snap.NodePools = append(w.snap.NodePools, p)
		w.types[p.Name] = catalogTypes()
		w.pools[p.Name] = p
	}
	return w
}

func nodeClass() *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	nc.Status.AMIs = []awsv1.AMI{{ID: "ami-1", Architecture: "amd64"}}
	nc.Status.Subnets = []awsv1.Subnet{{ID: "subnet-a", Zone: "zone-a"}, {ID: "subnet-b", Zone: "zone-b"}}
	nc.Status.SecurityGroups = []awsv1.SecurityGroup{{ID: "sg-1"}}
	return nc
}

type nodeOpt func(*nsv1.NodeClaim, *corev1.Node)

// node adds a claim of pool running it (a type of the pool's catalog) in
// zone as ct, created two hours ago and initialized an hour ago, stamped
// as the provisioner and the provider would stamp it now; it returns the
// node name.
func (w *world) node(pool, it, zone, ct string, opts ...nodeOpt) string {
	w.seq++
	name := fmt.Sprintf("%s-%02d", pool, w.seq)
	var typ *catalog.InstanceType
	for _, t := range w.types[pool] {
		if t.Name == it {
			typ = t
		}
	}
	if typ == nil {
		panic("no type " + it)
	}
	off, _ := typ.Offerings.Get(zone, ct)
	np := w.pools[pool]
	claim := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name: name, CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour)),
		Labels: map[string]string{nsv1.LabelNodePool: pool, corev1.LabelInstanceTypeStable: it, corev1.LabelTopologyZone: zone,
			nsv1.LabelCapacityType: ct, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
		Annotations: map[string]string{},
	}}
	claim.Annotations[nsv1.AnnotationNodePoolHash] = np.Hash()
	claim.Annotations[nsv1.AnnotationNodePoolHashVersion] = nsv1.NodePoolHashVersion
	for k, v := range awsv1.LaunchAnnotations(w.classes["default"], "subnet-a", []string{"sg-1"}) {
		claim.Annotations[k] = v
	}
	claim.Spec.NodeClassRef = np.Spec.Template.Spec.NodeClassRef
	claim.Spec.ExpireAfter = nsv1.MustParseNillableDuration("720h")
	claim.Status.NodeName = name
	claim.Status.ProviderID = "aws:///" + zone + "/i-" + name
	claim.Status.InstanceType, claim.Status.Zone, claim.Status.CapacityType = it, zone, ct
	claim.Status.ImageID = "ami-1"
	claim.Status.Price = nsv1.FormatPrice(off.Price)
	claim.Status.Allocatable = typ.Allocatable()
	lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.Condition(nsv1.ConditionInitialized, true, "", ""), 1, metav1.NewTime(now.Add(-time.Hour)))
	labels := map[string]string{corev1.LabelHostname: name}
	for k, v := range claim.Labels {
		labels[k] = v
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{}},
		Spec:   corev1.NodeSpec{ProviderID: claim.Status.ProviderID},
		Status: corev1.NodeStatus{Allocatable: typ.Allocatable(), Capacity: typ.Capacity}}
	for _, o := range opts {
		o(claim, n)
	}
	w.snap.NodeClaims = append(w.snap.NodeClaims, claim)
	w.snap.Nodes = append(w.snap.Nodes, n)
	w.snap.NodeByID[n.Spec.ProviderID] = n
	w.snap.ClaimByNode[name] = claim
	return name
}

func lastPodEvent(ago time.Duration) nodeOpt {
	return func(c *nsv1.NodeClaim, _ *corev1.Node) { c.Status.LastPodEventTime = metav1.NewTime(now.Add(-ago)) }
}

func createdAgo(ago time.Duration) nodeOpt {
	return func(c *nsv1.NodeClaim, _ *corev1.Node) { c.CreationTimestamp = metav1.NewTime(now.Add(-ago)) }
}

func claimAnnotation(k, v string) nodeOpt {
	return func(c *nsv1.NodeClaim, _ *corev1.Node) { c.Annotations[k] = v }
}

func nodeAnnotation(k, v string) nodeOpt {
	return func(_ *nsv1.NodeClaim, n *corev1.Node) { n.Annotations[k] = v }
}

func deleting(c *nsv1.NodeClaim, _ *corev1.Node) {
	ts := metav1.NewTime(now.Add(-time.Minute))
	c.DeletionTimestamp = &ts
}

type podOpt func(*corev1.Pod)

// pod binds a ReplicaSet pod requesting cpu (and 1Gi per cpu) to node.
func (w *world) pod(node, cpu string, opts ...podOpt) *corev1.Pod {
	w.seq++
	name := fmt.Sprintf("p-%03d", w.seq)
	q := resource.MustParse(cpu)
	mem := resource.NewQuantity(q.MilliValue()<<30/1000, resource.BinarySI)
	ctrl := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", Controller: &ctrl}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q, corev1.ResourceMemory: *mem}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	w.snap.Pods = append(w.snap.Pods, p)
	if node != "" {
		w.snap.PodsByNode[node] = append(w.snap.PodsByNode[node], p)
	}
	return p
}

func podAnnotation(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func unschedulable(p *corev1.Pod) {
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
}

func daemonPod(p *corev1.Pod) {
	ctrl := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", Controller: &ctrl}}
}

func pinnedTo(node string) podOpt {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node} }
}

// spreadOut keeps pods labelled app=spread off each other's nodes.
func spreadOut(p *corev1.Pod) {
	p.Labels["app"] = "spread"
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}}}
}

func labelled(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }

func (w *world) pdb(name string, allowed int32, matchLabels map[string]string) {
	w.snap.PDBs = append(w.snap.PDBs, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: matchLabels}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	})
}

func (w *world) daemonSet(cpu string) {
	q := resource.MustParse(cpu)
	w.snap.DaemonSets = append(w.snap.DaemonSets, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "agent", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q}}}}}}},
	})
}

func (w *world) input(mutate ...func(*Input)) Input {
	in := Input{Snapshot: w.snap, InstanceTypes: w.types, NodeClasses: w.classes, Now: now}
	for _, m := range mutate {
		m(&in)
	}
	return in
}
