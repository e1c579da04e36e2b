package simulator

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

// addSystemNode adds a node that exists from the start and is not Nodesmith's.
func (s *Sim) addSystemNode(sn scenario.SystemNode) error {
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
	n := s.newNode(sn.Name, it, o, labels, sn.Taints)
	n.launch = -1
	s.nodeReady(n)
	return nil
}

// newNode registers a node object (not yet Ready) of type it bought through o.
func (s *Sim) newNode(name string, it *catalog.InstanceType, o catalog.Offering, labels map[string]string, taints []corev1.Taint) *node {
	labels[corev1.LabelHostname] = name
	obj := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(s.clock.Now())},
		Spec:       corev1.NodeSpec{Taints: append([]corev1.Taint(nil), taints...)},
		Status:     corev1.NodeStatus{Allocatable: it.Allocatable(), Capacity: it.Capacity},
	}
	n := &node{
		name: name, obj: obj, it: it, zone: o.Zone, capType: o.CapacityType, price: o.Price, odPrice: it.OnDemandPrice,
		launchedAt: s.now, costSince: s.now, alloc: toResources(it.Allocatable()), used: resources{}, pods: map[*pod]struct{}{},
	}
	s.nodes = append(s.nodes, n)
	s.nodesByName[name] = n
	return n
}

// nodeReady is the kubelet registering a Ready node: the claim registers and
// initializes, DaemonSet pods start on it, and the binder gets a new target.
func (s *Sim) nodeReady(n *node) {
	if n.ready || n.gone || n.deleting {
		return
	}
	n.ready = true
	n.obj.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(s.clock.Now())}}
	if n.claim != nil {
		now := metav1.NewTime(s.clock.Now())
		lifecycle.SetCondition(&n.claim.Status.Conditions, lifecycle.Condition(nsv1.ConditionRegistered, true, "", ""), n.claim.Generation, now)
		if ok, _ := lifecycle.Initialized(n.claim, n.obj); ok {
			lifecycle.SetCondition(&n.claim.Status.Conditions, lifecycle.Condition(nsv1.ConditionInitialized, true, "", ""), n.claim.Generation, now)
		}
		n.claim.Status.NodeName = n.name
	}
	for _, ds := range s.daemonSetsFor(n) {
		p := s.newPod(fmt.Sprintf("%s-%s", ds.Name, n.name), &ds.Spec.Template, daemonOwner{}, "DaemonSet")
		s.bind(p, n)
	}
	s.kickBinder()
	// A node whose pods all went elsewhere is empty from the start.
	s.emptySoon(n)
}

// daemonOwner is the DaemonSet controller: its pods live and die with their node.
type daemonOwner struct{}

func (daemonOwner) podRunning(*pod) {}
func (daemonOwner) podGone(*pod)    {}

// drainWorldEvents handles the instance events the simulated AWS published.
func (s *Sim) drainWorldEvents() {
	for {
		s.worldMu.Lock()
		evs := s.worldEvents
		s.worldEvents = nil
		s.worldMu.Unlock()
		if len(evs) == 0 {
			return
		}
		for _, e := range evs {
			s.worldEvent(e)
		}
	}
}

func (s *Sim) worldEvent(e fakeaws.Event) {
	n := s.nodesByInstance[e.Instance.ID]
	switch e.Kind {
	case fakeaws.EventRunning:
		if n != nil {
			s.nodeReady(n)
		}
	case fakeaws.EventInterrupted:
		if n != nil {
			s.note("spot interruption notice for %s (%s in %s); the instance goes away at t=%s", n.name, n.it.Name, n.zone,
				output.FormatDuration(e.Instance.InterruptAt.Sub(Epoch)))
		}
		// The world terminates the instance at the next tick at or after the deadline.
		s.schedule(e.Instance.InterruptAt.Sub(Epoch), prioNormal, func() {})
	case fakeaws.EventTerminating:
		s.schedule(s.now+s.sc.World.ShutdownDelay.Duration, prioNormal, func() {})
		if n != nil {
			s.instanceStopped(n, e)
		}
	case fakeaws.EventTerminated:
		if n != nil {
			s.instanceStopped(n, e)
			s.nodeGone(n)
		}
	}
}

// instanceStopped: the instance left the running state. Billing stops, and
// the pods still on it are lost (their controllers replace them).
func (s *Sim) instanceStopped(n *node, e fakeaws.Event) {
	if !n.deleting {
		s.accrue(n)
		n.deleting = true
		l := &s.launches[n.launch]
		l.TerminatedAt, l.Terminated = s.now, true
		if l.Reason == "" {
			l.Reason = "instance " + strings.ToLower(string(e.Kind))
			if !e.Instance.InterruptAt.IsZero() {
				l.Reason = "spot interruption"
			}
		}
	}
	n.ready = false
	pods := make([]*pod, 0, len(n.pods))
	for p := range n.pods {
		pods = append(pods, p)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].seq < pods[j].seq })
	for _, p := range pods {
		s.removePod(p)
	}
}

// nodeGone removes the node object; pending pods nominated to it are planned again.
func (s *Sim) nodeGone(n *node) {
	if n.gone {
		return
	}
	n.gone = true
	delete(s.nodesByName, n.name)
	s.unnominate(n.name)
}

// unnominate releases the pods planned for a node that will not come: they
// are planned again at once, as the provisioner re-plans pods released from
// a failed claim.
func (s *Sim) unnominate(name string) {
	for _, p := range s.pending {
		if p.state == podPending && p.nominated == name {
			p.nominated = ""
			s.triggerProvisioning(p)
		}
	}
}
