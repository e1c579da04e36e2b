package scheduler

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// nodeInfo is the scheduler cache's view of one node: the Node object (nil
// while only pods name it, as happens when a pod's binding is seen before
// its node) and the sums of the pods bound to it.
type nodeInfo struct {
	id     int
	name   string
	node   *corev1.Node
	zone   string
	labels map[string]string // a copy, to notice label changes however the node is updated
	taints []corev1.Taint    // spec taints plus the not-ready taint a real control plane would add
	// taintReasons[i] is TaintToleration's message for taints[i].
	taintReasons []string

	alloc       resources
	allowedPods int64

	requested  resources // sum of pod requests (NodeResourcesFit, BalancedAllocation)
	nonZeroCPU int64     // sum with the 100m / 200Mi defaults (LeastAllocated)
	nonZeroMem int64
	pods       map[string]*boundPod
	ports      portSet
}

// boundPod is a pod in the cache with everything it contributes, so that
// removing it undoes exactly what adding it did.
type boundPod struct {
	key        string
	pod        *corev1.Pod
	node       string
	nodeID     int
	req        resources
	nonZeroCPU int64
	nonZeroMem int64
	ports      []corev1.ContainerPort
	counted    []*podCounter
	groups     []*termGroup
}

// UpsertNode adds or replaces a node: its labels, taints, unschedulable
// flag, allocatable and Ready condition. The scheduler keeps the pointer;
// pass a new object for every change, as an informer would.
func (s *Scheduler) UpsertNode(n *corev1.Node) {
	ni := s.nodeInfo(n.Name)
	zone := zoneKey(n)
	switch {
	case ni.node == nil:
		s.tree.add(zone, n.Name)
		s.nodesChanged()
	case ni.zone != zone:
		s.tree.remove(ni.zone, n.Name)
		s.tree.add(zone, n.Name)
		s.nodesChanged()
	case !maps.Equal(ni.labels, n.Labels):
		s.domainCache = map[string]*domainIndex{}
	}
	ni.node = n
	ni.labels = maps.Clone(n.Labels)
	ni.zone = zone
	ni.taints = effectiveTaints(n)
	ni.alloc = fromList(n.Status.Allocatable)
	pods := n.Status.Allocatable[corev1.ResourcePods]
	ni.allowedPods = pods.Value()
}

// DeleteNode removes a node. Pods still bound to it stay in the cache (as in
// kube-scheduler) until they are deleted, and count again if the node comes
// back.
func (s *Scheduler) DeleteNode(name string) {
	ni, ok := s.nodes[name]
	if !ok || ni.node == nil {
		return
	}
	s.tree.remove(ni.zone, name)
	s.nodesChanged()
	ni.node = nil
	if len(ni.pods) == 0 {
		delete(s.nodes, name)
	}
}

// UpsertPod records a pod bound to a node (spec.nodeName set). A pod without
// a node, or one that has Succeeded or Failed, is removed instead: it holds
// nothing. A pod with a deletionTimestamp still counts for resources, ports
// and inter-pod affinity until it is deleted (PodTopologySpread ignores it,
// as the real plugin does).
func (s *Scheduler) UpsertPod(p *corev1.Pod) {
	s.DeletePod(p)
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return
	}
	ni := s.nodeInfo(p.Spec.NodeName)
	bp := &boundPod{
		key:    podKey(p),
		pod:    p,
		node:   ni.name,
		nodeID: ni.id,
		req:    podRequests(p),
		ports:  hostPorts(p),
	}
	bp.nonZeroCPU, bp.nonZeroMem = nonZeroRequests(p, bp.req)
	ni.pods[bp.key] = bp
	ni.requested.add(bp.req, 1)
	ni.nonZeroCPU += bp.nonZeroCPU
	ni.nonZeroMem += bp.nonZeroMem
	for _, cp := range bp.ports {
		ni.ports.add(cp, 1)
	}
	s.pods[bp.key] = bp
	s.countPod(bp)
	s.groupTerms(bp)
}

// DeletePod removes a pod from the cache; unknown pods are ignored.
func (s *Scheduler) DeletePod(p *corev1.Pod) {
	key := podKey(p)
	bp, ok := s.pods[key]
	if !ok {
		return
	}
	delete(s.pods, key)
	s.uncountPod(bp)
	s.ungroupTerms(bp)
	ni := s.nodes[bp.node]
	delete(ni.pods, key)
	ni.requested.add(bp.req, -1)
	ni.nonZeroCPU -= bp.nonZeroCPU
	ni.nonZeroMem -= bp.nonZeroMem
	for _, cp := range bp.ports {
		ni.ports.add(cp, -1)
	}
	if ni.node == nil && len(ni.pods) == 0 {
		delete(s.nodes, bp.node)
	}
}

// UpsertNamespace records a namespace's labels for namespaceSelector in pod
// affinity terms. A namespace never upserted has only the label the API
// server always sets, kubernetes.io/metadata.name.
func (s *Scheduler) UpsertNamespace(ns *corev1.Namespace) {
	s.namespaces[ns.Name] = labels.Set(ns.Labels)
	s.resetCounters()
}

func (s *Scheduler) nsLabels(ns string) labels.Set {
	if l, ok := s.namespaces[ns]; ok {
		return l
	}
	l, ok := s.defaultNS[ns]
	if !ok {
		l = labels.Set{corev1.LabelMetadataName: ns}
		s.defaultNS[ns] = l
	}
	return l
}

func (s *Scheduler) nodeInfo(name string) *nodeInfo {
	ni, ok := s.nodes[name]
	if !ok {
		ni = &nodeInfo{id: s.nextID, name: name, pods: map[string]*boundPod{}, ports: portSet{}}
		s.nextID++
		s.nodes[name] = ni
	}
	return ni
}

// nodesChanged drops what depends on the set of nodes in the snapshot.
func (s *Scheduler) nodesChanged() {
	s.list = nil
	s.domainCache = map[string]*domainIndex{}
}

// nodeList is the snapshot's node order (zones interleaved), rebuilt after
// nodes come, go or change zone.
func (s *Scheduler) nodeList() []*nodeInfo {
	if s.list == nil {
		names := s.tree.list()
		s.list = make([]*nodeInfo, len(names))
		for i, name := range names {
			s.list[i] = s.nodes[name]
		}
	}
	return s.list
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// effectiveTaints adds the taint the node lifecycle controller puts on a
// node that is not Ready (node.kubernetes.io/not-ready, or unreachable when
// the condition is Unknown), unless the node already carries it, so an
// unready node filters like it does in a real cluster.
func effectiveTaints(n *corev1.Node) []corev1.Taint {
	key := corev1.TaintNodeNotReady
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		switch c.Status {
		case corev1.ConditionTrue:
			return n.Spec.Taints
		case corev1.ConditionUnknown:
			key = corev1.TaintNodeUnreachable
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == corev1.TaintEffectNoSchedule {
			return n.Spec.Taints
		}
	}
	out := make([]corev1.Taint, 0, len(n.Spec.Taints)+1)
	out = append(out, n.Spec.Taints...)
	return append(out, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
}
