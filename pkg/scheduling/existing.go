package scheduling

import (
	"container/heap"
	"math"
)

// Placing pods on existing capacity. Registered nodes are filled before
// in-flight claims (their pods can run now); within each, a class's pods go
// to the node whose spare room has the class's shape, so the room left
// stays usable by the other classes.
//
// First fit in node order used to be the rule. It fills whichever nodes
// come first: a class of 100m / 4Gi pods takes the memory of compute nodes
// and leaves their vCPUs idle behind it, and the cpu-heavy classes then
// find nowhere to go. Consolidation is where that shows: re-planning a
// burst's leftovers (1,000 nodes, 10,000 pods, pkg/disruption's benchmark)
// captured 94–96 % of the from-scratch repack's savings with first fit
// and ≈ 100 % with shape matching; pure tightness (fewest pods of the
// class left room for) did worse than first fit, 92 %, because it fills the
// binding dimension and strands the other one (docs/benchmarks.md).

// shapeBuckets is how finely spare-room shapes are told apart: log ratios
// rounded to 1/8 (about 13 %), so near-equal shapes count as one and the
// tighter node among them wins.
const shapeBuckets = 8

// placeOnNodes binds as many of the class's pods as fit to existing nodes:
// registered nodes first, then in-flight claims, each the best-shaped first.
func (s *solver) placeOnNodes(c *podClass, v *variant) {
	st := s.state[c]
	for start := 0; start < len(s.nodes) && len(st.left) > 0; {
		end := start
		for end < len(s.nodes) && s.nodes[end].n.InFlight == s.nodes[start].n.InFlight {
			end++
		}
		s.placeByShape(c, v, s.nodes[start:end])
		start = end
	}
}

// placeByShape places the class's pods one at a time on the node with the
// lowest fitScore, re-scoring that node after each pod. A node that cannot
// take one more pod is dropped for good: within one class's placement its
// room only shrinks and its topology counts only grow.
//
// Every node with room is scored (a few comparisons and a logarithm), but
// compatibility (a selector match) is checked only when a node comes to the
// top: a class usually places its pods on a few nodes, and checking all of
// a 10,000-node cluster's made this a seventh of a provisioning cycle.
func (s *solver) placeByShape(c *podClass, v *variant, nodes []*nodeState) {
	st := s.state[c]
	h := s.shapeBuf[:0]
	defer func() { s.shapeBuf = h[:0] }()
	for i, n := range nodes {
		if !c.req.fits(n.free) {
			continue
		}
		shape, room := fitScore(c.req, n.free)
		h = append(h, shapeEntry{n: n, shape: shape, room: room, order: i})
	}
	heap.Init(&h)
	for len(st.left) > 0 && len(h) > 0 {
		n := h[0].n
		if !c.req.fits(n.free) || !s.nodeCompatible(c, v, n) || !s.canHost(c, v, &n.host, n.zone) {
			h.dropTop()
			continue
		}
		p := st.left[0]
		st.left = st.left[1:]
		n.free.sub(c.req)
		s.record(c, v, &n.host, n.zone)
		s.noms = append(s.noms, Nomination{Pod: p, Node: n.n.Name})
		h[0].shape, h[0].room = fitScore(c.req, n.free)
		heap.Fix(&h, 0)
	}
}

// fitScore rates a node's spare room for a class. shape is how far the
// room's cpu:memory ratio is from the class's (0 when the class would use
// up both at the same pod), in buckets of 1/shapeBuckets of a natural log;
// room is how many pods of the class fit, the tie-break (tightest first).
// A class that asks for only one of cpu and memory (or neither) has no
// shape to match and goes tightest first.
func fitScore(req, free vec) (shape, room float64) {
	byCPU, byMem := math.Inf(1), math.Inf(1)
	if req[dimCPU] > 0 {
		byCPU = float64(free[dimCPU]) / float64(req[dimCPU])
	}
	if req[dimMemory] > 0 {
		byMem = float64(free[dimMemory]) / float64(req[dimMemory])
	}
	lo, hi := min(byCPU, byMem), max(byCPU, byMem)
	if math.IsInf(hi, 1) || lo <= 0 {
		return 0, lo
	}
	return math.Round(math.Log(hi/lo)*shapeBuckets) / shapeBuckets, lo
}

// shapeEntry is a node in a class's placement heap.
type shapeEntry struct {
	n           *nodeState
	shape, room float64
	order       int // the node's place in the solver's order: the last tie-break
}

type shapeHeap []shapeEntry

func (h shapeHeap) Len() int { return len(h) }
func (h shapeHeap) Less(i, j int) bool {
	if h[i].shape != h[j].shape {
		return h[i].shape < h[j].shape
	}
	if h[i].room != h[j].room {
		return h[i].room < h[j].room
	}
	return h[i].order < h[j].order
}
func (h shapeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *shapeHeap) Push(x any)   { *h = append(*h, x.(shapeEntry)) }

// dropTop removes the heap's first entry without heap.Pop, whose any
// result would allocate for every node dropped.
func (h *shapeHeap) dropTop() {
	last := len(*h) - 1
	(*h)[0] = (*h)[last]
	*h = (*h)[:last]
	if last > 0 {
		heap.Fix(h, 0)
	}
}

func (h *shapeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
