package simulator

import (
	"fmt"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	awsprovider "github.com/nodesmith/nodesmith/pkg/providers/aws"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

// Timings of the parts of Kubernetes the simulator plays.
const (
	// podGCPeriod and podGCQuarantine: kube-controller-manager's pod
	// garbage collector deletes pods bound to a node that has been gone
	// this long, checking this often.
	podGCPeriod     = 20 * time.Second
	podGCQuarantine = 40 * time.Second
)

// kubelets plays the kubelet of every node, the cloud's node lifecycle
// controller (a Node is registered when its instance runs and deleted when
// it is terminated) and the pod garbage collector.
type kubelets struct {
	s *Sim
	// nodeOf maps an instance to its node; dead marks nodes whose instance
	// stopped (nothing runs there any more).
	nodeOf map[string]string
	dead   map[string]bool
	// podsOn are the pods bound to each node, for the kubelet's own work.
	podsOn map[string]map[*pod]struct{}
	// goneAt is when each vanished node disappeared, for the pod GC.
	goneAt  map[string]time.Duration
	gcArmed bool
}

func newKubelets(s *Sim) *kubelets {
	return &kubelets{s: s, nodeOf: map[string]string{}, dead: map[string]bool{}, podsOn: map[string]map[*pod]struct{}{}, goneAt: map[string]time.Duration{}}
}

// NodeFor is the Node a simulated instance's kubelet registers: named after
// the instance, with its providerID, the labels and taints its user data
// asks for (always including Nodesmith's unregistered taint), the instance
// type's capacity and allocatable, Ready. The e2e lab's bridge registers
// the same Node, so the lab and the simulator start nodes alike.
func NodeFor(in fakeaws.Instance, cat *catalog.Catalog, region string) (*corev1.Node, error) {
	labels, taints, err := awsprovider.ParseUserData(in.UserData)
	if err != nil {
		return nil, fmt.Errorf("parsing the user data of %s: %w", in.ID, err)
	}
	it, ok := cat.Get(in.Type)
	if !ok {
		return nil, fmt.Errorf("instance %s: type %s is not in the catalog", in.ID, in.Type)
	}
	name := strings.ToLower(in.ID)
	all := map[string]string{
		corev1.LabelHostname:           name,
		corev1.LabelArchStable:         catalog.KubeArch(in.Arch),
		corev1.LabelOSStable:           "linux",
		corev1.LabelInstanceTypeStable: in.Type,
		corev1.LabelTopologyZone:       in.Zone,
		corev1.LabelTopologyRegion:     region,
	}
	for k, v := range labels {
		all[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all},
		Spec:       corev1.NodeSpec{ProviderID: fmt.Sprintf("aws:///%s/%s", in.Zone, in.ID), Taints: taints},
		Status:     corev1.NodeStatus{Capacity: it.Capacity.DeepCopy(), Allocatable: it.Allocatable()},
	}, nil
}

func ready(n *corev1.Node, at time.Time) {
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.NewTime(at), LastTransitionTime: metav1.NewTime(at)}}
}

// instanceRunning registers the instance's Node, Ready.
func (k *kubelets) instanceRunning(in fakeaws.Instance) {
	s := k.s
	n, err := NodeFor(in, s.catalog, s.sc.World.Region)
	if err != nil {
		s.fail(err)
		return
	}
	ready(n, s.clock.Now())
	k.nodeOf[in.ID] = n.Name
	if err := s.kube.Create(s.ctx, n); client.IgnoreAlreadyExists(err) != nil {
		s.fail(fmt.Errorf("registering node %s: %w", n.Name, err))
	}
}

// addSystemNode registers a node that exists from the start and is not Nodesmith's.
func (k *kubelets) addSystemNode(sn scenario.SystemNode) error {
	s := k.s
	it, ok := s.catalog.Get(sn.InstanceType)
	if !ok {
		return fmt.Errorf("system node %s: instance type %s is not in the catalog", sn.Name, sn.InstanceType)
	}
	o, ok := it.Offerings.Get(sn.Zone, sn.CapacityType)
	if !ok {
		return fmt.Errorf("system node %s: %s is not offered as %s in %s", sn.Name, sn.InstanceType, sn.CapacityType, sn.Zone)
	}
	labels := it.LabelsFor(o)
	for k, v := range sn.Labels {
		labels[k] = v
	}
	labels[corev1.LabelHostname] = sn.Name
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: sn.Name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: append([]corev1.Taint(nil), sn.Taints...)},
		Status:     corev1.NodeStatus{Capacity: it.Capacity.DeepCopy(), Allocatable: it.Allocatable()},
	}
	ready(n, s.clock.Now())
	s.bill.system(sn.Name, o.CapacityType, o.Price)
	return s.kube.Create(s.ctx, n)
}

// instanceStopped: the instance left the running state, its kubelet with
// it. The processes on the node die; their API objects remain until the
// node's cleanup deletes them.
func (k *kubelets) instanceStopped(in fakeaws.Instance) {
	if name, ok := k.nodeOf[in.ID]; ok {
		k.stop(name)
	}
}

// stop: the node's kubelet stopped (with its instance, or alone: a node
// gone NotReady). Its pods stop running and nothing it would confirm is
// confirmed any more; their API objects remain.
func (k *kubelets) stop(name string) {
	if k.dead[name] {
		return
	}
	k.dead[name] = true
	for _, p := range k.podsSorted(name) {
		if p.state == podGone || p.state == podLost {
			continue
		}
		k.s.setState(p, podLost)
		if p.owner != nil {
			p.owner.podLost(p)
		}
	}
}

// instanceTerminated deletes the instance's Node, as the cloud node
// lifecycle controller does (Nodesmith's finalizer turns it into a drain).
func (k *kubelets) instanceTerminated(in fakeaws.Instance) {
	k.instanceStopped(in)
	name, ok := k.nodeOf[in.ID]
	if !ok {
		return
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k.s.kube.Delete(k.s.ctx, n); client.IgnoreNotFound(err) != nil {
		k.s.fail(fmt.Errorf("deleting node %s of terminated instance %s: %w", name, in.ID, err))
	}
}

func (k *kubelets) podsSorted(node string) []*pod {
	out := make([]*pod, 0, len(k.podsOn[node]))
	for p := range k.podsOn[node] {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// start runs a bound pod: Running after the pod start delay (daemon pods at
// once), unless its node is dead.
func (k *kubelets) start(p *pod) {
	set := k.podsOn[p.node]
	if set == nil {
		set = map[*pod]struct{}{}
		k.podsOn[p.node] = set
	}
	set[p] = struct{}{}
	if k.dead[p.node] {
		return
	}
	delay := k.s.sc.World.PodStartDelay.Duration
	if p.daemon {
		delay = 0
	}
	k.s.after(delay, func() { k.run(p) })
}

func (k *kubelets) run(p *pod) {
	s := k.s
	if p.state != podStarting || k.dead[p.node] {
		return
	}
	obj := s.getPod(p)
	if obj == nil || obj.DeletionTimestamp != nil {
		return
	}
	now := metav1.NewTime(s.clock.Now())
	obj.Status.Phase = corev1.PodRunning
	obj.Status.StartTime = &now
	setPodCondition(obj, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
	setPodCondition(obj, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
	if err := s.kube.Status().Update(s.ctx, obj); err != nil {
		s.fail(fmt.Errorf("starting pod %s: %w", p.key, err))
		return
	}
	s.setState(p, podRunning)
	if !p.daemon {
		s.podStarts = append(s.podStarts, output.PodStart{Pod: p.key.Name, Created: p.createdAt, Running: s.now})
	}
	if !p.daemon && !s.firstPodRunning.Reached {
		s.firstPodRunning = reached(s.now)
	}
	if p.owner != nil {
		p.owner.podRunning(p)
	}
}

func setPodCondition(p *corev1.Pod, c corev1.PodCondition) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == c.Type {
			p.Status.Conditions[i] = c
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

// deleting handles a pod whose deletion began: the kubelet sends SIGTERM
// (the owner stops the process, finishing in-flight work if it can) and
// kills it when the grace period ends.
func (k *kubelets) deleting(p *pod, obj *corev1.Pod) {
	s := k.s
	if obj.Spec.NodeName == "" || k.dead[p.node] || p.state == podGone || p.state == podLost {
		return
	}
	// The deletion timestamp of a pod is when its grace period ends.
	p.killAt = obj.DeletionTimestamp.Sub(Epoch)
	if p.state != podTerminating {
		wasRunning := p.state == podRunning
		s.setState(p, podTerminating)
		if wasRunning && p.owner != nil {
			o := p.owner
			s.schedule(s.now, prioNormal, func() { o.podStopping(p) })
		} else {
			s.schedule(s.now, prioNormal, func() { k.exited(p) })
		}
	}
	s.schedule(max(p.killAt, s.now), prioNormal, func() { k.exited(p) })
}

// exited: the pod's process ended; the kubelet confirms the deletion.
func (k *kubelets) exited(p *pod) {
	if p.state != podTerminating {
		return
	}
	s := k.s
	obj := &corev1.Pod{}
	obj.Namespace, obj.Name = p.key.Namespace, p.key.Name
	if err := s.kube.Delete(s.ctx, obj, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		s.fail(fmt.Errorf("removing pod %s: %w", p.key, err))
	}
}

// forget drops a deleted pod from its node.
func (k *kubelets) forget(p *pod) {
	if set := k.podsOn[p.node]; set != nil {
		delete(set, p)
	}
}

// nodeGone starts the pod GC's quarantine of a vanished node's pods.
func (k *kubelets) nodeGone(name string) {
	if len(k.podsOn[name]) == 0 {
		delete(k.podsOn, name)
		return
	}
	k.goneAt[name] = k.s.now
	k.armGC()
}

func (k *kubelets) armGC() {
	if k.gcArmed {
		return
	}
	k.gcArmed = true
	k.s.after(podGCPeriod, k.collect)
}

// collect force-deletes pods bound to nodes gone for the quarantine time.
func (k *kubelets) collect() {
	k.gcArmed = false
	s := k.s
	names := make([]string, 0, len(k.goneAt))
	for n := range k.goneAt {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if s.now-k.goneAt[name] < podGCQuarantine {
			continue
		}
		if s.nodeOf(name) != nil {
			delete(k.goneAt, name) // it came back
			continue
		}
		for _, p := range k.podsSorted(name) {
			obj := &corev1.Pod{}
			obj.Namespace, obj.Name = p.key.Namespace, p.key.Name
			if err := s.kube.Delete(s.ctx, obj, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				s.fail(fmt.Errorf("collecting pod %s of vanished node %s: %w", p.key, name, err))
				return
			}
		}
		delete(k.goneAt, name)
		delete(k.podsOn, name)
	}
	if len(k.goneAt) > 0 {
		k.armGC()
	}
}
