package simulator

import (
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

type podState int

const (
	podPending podState = iota
	podStarting
	podRunning
	podTerminating
	podGone
)

// owner is the controller that made a pod: it hears when the pod runs and
// when it is gone so it can do its work or replace it.
type owner interface {
	podRunning(p *pod)
	podGone(p *pod)
}

// pod is the simulator's view of one pod; obj is the API object handed to
// the product's code.
type pod struct {
	obj      *corev1.Pod
	seq      int
	owner    owner
	daemon   bool
	state    podState
	node     *node
	req      resources
	affinity nodeaffinity.RequiredNodeAffinity
	// nominated is the node or claim the solver planned the pod for, at nominatedAt.
	nominated   string
	nominatedAt time.Duration
	createdAt   time.Duration
	// busy counts the messages a queue worker is processing; a terminating
	// worker leaves when it reaches zero.
	busy int
	// held are the receive times of the messages it holds, to know when they
	// come back if the pod dies holding them.
	held []time.Duration
}

// resources is a resource list as int64s (cpu in millicores), cheap to add
// and compare in the binder's inner loop.
type resources map[corev1.ResourceName]int64

func toResources(rl corev1.ResourceList) resources {
	out := make(resources, len(rl))
	for name, q := range rl {
		if name == corev1.ResourceCPU {
			out[name] = q.MilliValue()
		} else {
			out[name] = q.Value()
		}
	}
	return out
}

// node is one node: a system node or a NodeClaim's instance, from launch on.
type node struct {
	name       string
	obj        *corev1.Node
	claim      *nsv1.NodeClaim // nil for system nodes
	pool       string
	instanceID string
	it         *catalog.InstanceType
	zone       string
	capType    string
	price      float64
	odPrice    float64
	launchedAt time.Duration
	ready      bool
	deleting   bool
	gone       bool
	alloc      resources
	used       resources
	pods       map[*pod]struct{}
	launch     int // index into Sim.launches, -1 for system nodes
	// cost accrued up to costSince at the current price.
	cost      float64
	costSince time.Duration
}

func (n *node) system() bool { return n.claim == nil }

// podObjs are the API objects of the pods on the node.
func (n *node) podObjs() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(n.pods))
	for p := range n.pods {
		out = append(out, p.obj)
	}
	return out
}

// newPod builds a pending pod from a template.
func (s *Sim) newPod(name string, tmpl *corev1.PodTemplateSpec, o owner, ownerKind string) *pod {
	s.podSerial++
	obj := &corev1.Pod{
		ObjectMeta: *tmpl.ObjectMeta.DeepCopy(),
		Spec:       *tmpl.Spec.DeepCopy(),
	}
	obj.Name = name
	if obj.Namespace == "" {
		obj.Namespace = "default"
	}
	obj.UID = types.UID(name)
	obj.CreationTimestamp = metav1.NewTime(s.clock.Now())
	isController := true
	obj.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: ownerKind, Name: name, UID: types.UID(ownerKind + "/" + name), Controller: &isController}}
	obj.Status.Phase = corev1.PodPending
	p := &pod{
		obj:       obj,
		seq:       s.podSerial,
		owner:     o,
		daemon:    ownerKind == "DaemonSet",
		req:       toResources(resourcehelper.PodRequests(obj, resourcehelper.PodResourcesOptions{})),
		affinity:  nodeaffinity.GetRequiredNodeAffinity(obj),
		createdAt: s.now,
	}
	p.req[corev1.ResourcePods] = 1
	return p
}

// addPod makes a workload pod known and asks the binder to place it.
func (s *Sim) addPod(p *pod) {
	s.pending = append(s.pending, p)
	s.podCount[podPending]++
	s.podsCreated++
	s.kickBinder()
}

// fits is kube-scheduler's filter for the simulator: Ready, untainted for
// the pod, matching its node selector and affinity, and with room.
func fits(p *pod, n *node) bool {
	if !n.ready || n.deleting || n.gone {
		return false
	}
	for name, v := range p.req {
		if n.used[name]+v > n.alloc[name] {
			return false
		}
	}
	if !tolerates(p.obj.Spec.Tolerations, n.obj.Spec.Taints) {
		return false
	}
	ok, err := p.affinity.Match(n.obj)
	return ok && err == nil
}

func tolerates(tols []corev1.Toleration, taints []corev1.Taint) bool {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		tolerated := false
		for j := range tols {
			if tols[j].ToleratesTaint(logr.Discard(), t, false) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return false
		}
	}
	return true
}

// bind places p on n and starts it after the pod start delay.
func (s *Sim) bind(p *pod, n *node) {
	p.node = n
	s.setState(p, podStarting)
	p.obj.Spec.NodeName = n.name
	p.obj.Status.Conditions = nil
	for name, v := range p.req {
		n.used[name] += v
	}
	n.pods[p] = struct{}{}
	s.podEventOn(n)
	delay := s.sc.World.PodStartDelay.Duration
	if p.daemon {
		delay = 0
	}
	s.after(delay, func() {
		if p.state != podStarting {
			return
		}
		s.setState(p, podRunning)
		p.obj.Status.Phase = corev1.PodRunning
		start := metav1.NewTime(s.clock.Now())
		p.obj.Status.StartTime = &start
		if !p.daemon && !s.firstPodRunning.Reached {
			s.firstPodRunning = reached(s.now)
		}
		p.owner.podRunning(p)
	})
}

// podEventOn records that a pod arrived on or left n (consolidateAfter
// counts from the last such event).
func (s *Sim) podEventOn(n *node) {
	if n.claim != nil {
		n.claim.Status.LastPodEventTime = metav1.NewTime(s.clock.Now())
	}
}

// removePod takes p out of the cluster: its resources are freed and its
// owner is told.
func (s *Sim) removePod(p *pod) {
	if p.state == podGone {
		return
	}
	s.setState(p, podGone)
	if n := p.node; n != nil {
		for name, v := range p.req {
			n.used[name] -= v
		}
		delete(n.pods, p)
		s.podEventOn(n)
		s.kickBinder()
		s.emptySoon(n)
	}
	p.owner.podGone(p)
}

// terminate deletes p gracefully: a pod with work in hand finishes it first.
func (s *Sim) terminate(p *pod) {
	switch p.state {
	case podGone, podTerminating:
		return
	case podPending:
		s.removePod(p)
		return
	}
	now := metav1.NewTime(s.clock.Now())
	p.obj.DeletionTimestamp = &now
	s.setState(p, podTerminating)
	if p.busy == 0 {
		s.removePod(p)
	}
}

// kickBinder runs the binder once at the end of the current instant, however
// many changes asked for it.
func (s *Sim) kickBinder() {
	if s.binderQueued {
		return
	}
	s.binderQueued = true
	s.schedule(s.now, prioLate, s.runBinder)
}

// runBinder plays kube-scheduler: every pending pod goes to the node the
// solver nominated it for when that node is Ready and has room, otherwise to
// the first Ready node that fits. Pods that fit nowhere are marked
// Unschedulable, which is what makes them provisionable.
func (s *Sim) runBinder() {
	s.binderQueued = false
	live := s.pending[:0]
	var unschedulable []*pod
	// Full nodes are left out up front: at scale most nodes are full and
	// most pending pods wait for nodes that are still booting.
	var cands []*node
	for _, n := range s.nodes {
		if n.ready && !n.deleting && n.used[corev1.ResourcePods] < n.alloc[corev1.ResourcePods] &&
			n.used[corev1.ResourceCPU] < n.alloc[corev1.ResourceCPU] {
			cands = append(cands, n)
		}
	}
	for _, p := range s.pending {
		if p.state != podPending {
			continue
		}
		if n := s.nodesByName[p.nominated]; n != nil && fits(p, n) {
			s.bind(p, n)
			continue
		}
		if n := s.firstFit(p, cands); n != nil {
			s.bind(p, n)
			continue
		}
		live = append(live, p)
		unschedulable = append(unschedulable, p)
	}
	clear(s.pending[len(live):])
	s.pending = live
	for _, p := range unschedulable {
		s.markUnschedulable(p)
	}
}

func (s *Sim) firstFit(p *pod, cands []*node) *node {
	for _, n := range cands {
		if fits(p, n) {
			return n
		}
	}
	return nil
}

// markUnschedulable sets the PodScheduled condition kube-scheduler writes,
// which starts the provisioning pod controller's loop for the pod.
func (s *Sim) markUnschedulable(p *pod) {
	if len(p.obj.Status.Conditions) == 0 {
		p.obj.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			LastTransitionTime: metav1.NewTime(s.clock.Now()),
		}}
		s.podController(p)
	}
}

// setState moves a workload pod to st, keeping the per-state counts the
// timeline reads.
func (s *Sim) setState(p *pod, st podState) {
	if !p.daemon {
		s.podCount[p.state]--
		s.podCount[st]++
	}
	p.state = st
}
