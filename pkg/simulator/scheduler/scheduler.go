package scheduler

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Scheduler is a cache of nodes and bound pods plus the default profile's
// filters and scores over it. It is not safe for concurrent use.
type Scheduler struct {
	nodes       map[string]*nodeInfo
	tree        *nodeTree
	list        []*nodeInfo // snapshot order; nil when stale
	nextID      int
	domainCache map[string]*domainIndex
	pods        map[string]*boundPod

	namespaces  map[string]labels.Set
	defaultNS   map[string]labels.Set // namespaces never upserted: only the name label
	controllers map[string]labels.Selector

	counters     counterIndex
	groups       map[string]*termGroup
	groupsByKind [4][]*termGroup

	vols *volumeStore // PVCs, PVs and StorageClasses (VolumeBinding); nil until one is upserted

	percentage int32
	nextStart  int
	cycles     uint64   // scheduling cycles run
	reasonBuf  []string // scratch for filter
}

// New returns an empty scheduler with kube-scheduler's default
// configuration (adaptive percentageOfNodesToScore).
func New() *Scheduler {
	return &Scheduler{
		nodes:       map[string]*nodeInfo{},
		tree:        newNodeTree(),
		pods:        map[string]*boundPod{},
		namespaces:  map[string]labels.Set{},
		defaultNS:   map[string]labels.Set{},
		controllers: map[string]labels.Selector{},
		counters:    newCounterIndex(),
		groups:      map[string]*termGroup{},
		domainCache: map[string]*domainIndex{},
	}
}

// SetPercentageOfNodesToScore sets KubeSchedulerConfiguration's
// percentageOfNodesToScore: 0 (the default) is adaptive, 50% at 100 nodes
// falling to 5% at 5,625; 100 scores every feasible node. Below 100 nodes
// every node is always scored.
func (s *Scheduler) SetPercentageOfNodesToScore(p int32) { s.percentage = p }

// numFeasibleNodesToFind is how many feasible nodes the scheduler looks for
// before it stops filtering.
func (s *Scheduler) numFeasibleNodesToFind(all int) int {
	const minFeasible, minPercentage = 100, 5
	if all < minFeasible {
		return all
	}
	p := s.percentage
	if p == 0 {
		p = max(50-int32(all)/125, minPercentage)
	}
	n := all * int(p) / 100
	if n < minFeasible {
		return minFeasible
	}
	return n
}

// Schedule picks the node the default profile would bind p to, or returns
// a *FitError. It filters the nodes in the snapshot's order, starting where
// the previous cycle stopped and stopping once enough feasible nodes are
// found (as kube-scheduler does), scores the feasible ones and takes the
// highest total; ties go to the first node name in lexical order, where
// kube-scheduler would pick one at random. It does not bind: the caller
// binds and then calls UpsertPod with the bound pod.
func (s *Scheduler) Schedule(p *corev1.Pod) (string, error) {
	feasible, total, err := s.cycle(p)
	if err != nil {
		return "", err
	}
	best := 0
	for j := 1; j < len(feasible); j++ {
		if total[j] > total[best] || (total[j] == total[best] && feasible[j].name < feasible[best].name) {
			best = j
		}
	}
	return feasible[best].name, nil
}

// NodeScore is a feasible node and its weighted score.
type NodeScore struct {
	Node  string
	Score int64
}

// Rank runs a scheduling cycle like Schedule (and advances where the next
// one starts, as Schedule does) and returns the nodes it scored, best first,
// ties by name; kube-scheduler picks at random among the nodes sharing the
// top score. A cycle that needs no scoring (a single feasible node, or a
// fitting nominated node) returns that node with score 0.
func (s *Scheduler) Rank(p *corev1.Pod) ([]NodeScore, error) {
	feasible, total, err := s.cycle(p)
	if err != nil {
		return nil, err
	}
	out := make([]NodeScore, len(feasible))
	for j, ni := range feasible {
		out[j] = NodeScore{Node: ni.name}
		if total != nil {
			out[j].Score = total[j]
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Node < out[j].Node
	})
	return out, nil
}

// cycle is one scheduling cycle: the feasible nodes it found and their
// scores (nil when scoring was not needed), or a *FitError.
func (s *Scheduler) cycle(p *corev1.Pod) ([]*nodeInfo, []int64, error) {
	list := s.nodeList()
	if len(list) == 0 {
		return nil, nil, &FitError{Pod: podKey(p), Reasons: map[string]int{}}
	}
	s.cycles++
	if s.cycles%counterIdleCycles == 0 {
		s.sweepCounters()
	}
	pi := s.newPodInfo(p)
	if pi.prefilter != "" {
		return nil, nil, &FitError{Pod: podKey(p), NumNodes: len(list), Reasons: map[string]int{}, PreFilter: pi.prefilter}
	}

	// A pod nominated to a node (by preemption, or by a component setting
	// nominatedNodeName) is tried there first and bound without scoring.
	if name := p.Status.NominatedNodeName; name != "" {
		if ni := s.nodes[name]; ni != nil && ni.node != nil && len(s.filter(pi, ni, s.reasonBuf[:0])) == 0 {
			return []*nodeInfo{ni}, nil, nil
		}
	}

	want := s.numFeasibleNodesToFind(len(list))
	feasible := make([]*nodeInfo, 0, want)
	reasons := map[string]int{}
	processed := 0
	for i := 0; i < len(list) && len(feasible) < want; i++ {
		ni := list[(s.nextStart+i)%len(list)]
		processed++
		r := s.filter(pi, ni, s.reasonBuf[:0])
		if len(r) == 0 {
			feasible = append(feasible, ni)
			continue
		}
		for _, reason := range r {
			reasons[reason]++
		}
		s.reasonBuf = r
	}
	s.nextStart = (s.nextStart + processed) % len(list)
	switch len(feasible) {
	case 0:
		return nil, nil, &FitError{Pod: podKey(p), NumNodes: len(list), Reasons: reasons}
	case 1:
		return feasible, nil, nil
	}
	return feasible, s.score(pi, feasible), nil
}

// FitError is the scheduler's "no node fits" result: the pod
// (namespace/name), how many nodes there were and, per reason, on how many
// nodes it applied (a node rejected by NodeResourcesFit for cpu and memory
// counts under both).
type FitError struct {
	Pod      string
	NumNodes int
	Reasons  map[string]int
	// PreFilter is the message of a PreFilter that rejected the pod before
	// any node was filtered (VolumeBinding: a claim not found).
	PreFilter string
}

// Error reads like kube-scheduler's FailedScheduling message, without the
// preemption part (preemption is not modelled).
func (e *FitError) Error() string {
	if e.NumNodes == 0 {
		return "no nodes available to schedule pods"
	}
	if e.PreFilter != "" {
		return fmt.Sprintf("0/%d nodes are available: %s.", e.NumNodes, e.PreFilter)
	}
	parts := make([]string, 0, len(e.Reasons))
	for reason, n := range e.Reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, reason))
	}
	sort.Strings(parts)
	msg := fmt.Sprintf("0/%d nodes are available:", e.NumNodes)
	if len(parts) > 0 {
		msg += " " + strings.Join(parts, ", ") + "."
	}
	return msg
}
