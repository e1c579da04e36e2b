package scheduler

import (
	"math"

	corev1 "k8s.io/api/core/v1"
)

// maxNodeScore is framework.MaxNodeScore.
const maxNodeScore int64 = 100

// The default profile's score weights.
const (
	weightTaintToleration  = 3
	weightNodeAffinity     = 2
	weightFit              = 1 // NodeResourcesFit, LeastAllocated on cpu and memory
	weightBalanced         = 1 // NodeResourcesBalancedAllocation
	weightTopologySpread   = 2
	weightInterPodAffinity = 2
	// ImageLocality (weight 1) scores 0 everywhere: the simulator has no
	// images on nodes.
)

// score returns the weighted sum of the normalized plugin scores for each
// feasible node.
func (s *Scheduler) score(pi *podInfo, feasible []*nodeInfo) []int64 {
	total := make([]int64, len(feasible))
	balanced := pi.req.milliCPU != 0 || pi.req.memory != 0 // best-effort pods skip BalancedAllocation
	taints := make([]int64, len(feasible))
	var affinity []int64
	if pi.preferredNodeAff != nil {
		affinity = make([]int64, len(feasible))
	}
	for j, ni := range feasible {
		total[j] += weightFit * leastAllocated(pi, ni)
		if balanced {
			total[j] += weightBalanced * balancedAllocation(pi, ni)
		}
		taints[j] = intolerablePreferNoSchedule(pi, ni)
		if affinity != nil {
			affinity[j] = pi.preferredNodeAff.Score(ni.node)
		}
	}
	addWeighted(total, normalize(taints, true), weightTaintToleration)
	if affinity != nil {
		addWeighted(total, normalize(affinity, false), weightNodeAffinity)
	}
	if sc := s.spreadScores(pi, feasible); sc != nil {
		addWeighted(total, sc, weightTopologySpread)
	}
	if sc := s.interPodScores(pi, feasible); sc != nil {
		addWeighted(total, sc, weightInterPodAffinity)
	}
	return total
}

func addWeighted(total, scores []int64, w int64) {
	for j := range total {
		total[j] += w * scores[j]
	}
}

// normalize is the framework's DefaultNormalizeScore: scale to 0..100 by
// the maximum, reversed for plugins where more is worse.
func normalize(scores []int64, reverse bool) []int64 {
	var hi int64
	for _, v := range scores {
		hi = max(hi, v)
	}
	for j, v := range scores {
		switch {
		case hi == 0 && reverse:
			scores[j] = maxNodeScore
		case hi == 0:
		default:
			v = maxNodeScore * v / hi
			if reverse {
				v = maxNodeScore - v
			}
			scores[j] = v
		}
	}
	return scores
}

// leastAllocated is NodeResourcesFit's default LeastAllocated score over
// cpu and memory (weight 1 each), using the 100m / 200Mi non-zero requests.
func leastAllocated(pi *podInfo, ni *nodeInfo) int64 {
	var sum, weights int64
	for _, r := range [2][2]int64{
		{ni.alloc.milliCPU, ni.nonZeroCPU + pi.nonZeroCPU},
		{ni.alloc.memory, ni.nonZeroMem + pi.nonZeroMem},
	} {
		capacity, requested := r[0], r[1]
		if capacity == 0 {
			continue
		}
		if requested <= capacity {
			sum += (capacity - requested) * maxNodeScore / capacity
		}
		weights++
	}
	if weights == 0 {
		return 0
	}
	return sum / weights
}

// balancedAllocation is NodeResourcesBalancedAllocation as of v1.36
// (kubernetes#135573): it scores how much the pod improves the node's
// balance, 50 + (50 + balance with the pod − balance without it)/2, so 75
// is no change, 100 the best improvement and 50 the worst. Balance is
// 100 × (1 − the standard deviation of the cpu and memory fractions), on
// actual requests.
func balancedAllocation(pi *podInfo, ni *nodeInfo) int64 {
	with := balance(ni.alloc.milliCPU, ni.requested.milliCPU+pi.req.milliCPU, ni.alloc.memory, ni.requested.memory+pi.req.memory)
	without := balance(ni.alloc.milliCPU, ni.requested.milliCPU, ni.alloc.memory, ni.requested.memory)
	return maxNodeScore/2 + (maxNodeScore/2+with-without)/2
}

func balance(cpuCap, cpuReq, memCap, memReq int64) int64 {
	var fractions [2]float64
	n := 0
	for _, r := range [2][2]int64{{cpuCap, cpuReq}, {memCap, memReq}} {
		capacity, requested := r[0], r[1]
		if capacity == 0 {
			continue
		}
		fractions[n] = min(float64(requested)/float64(capacity), 1)
		n++
	}
	std := 0.0
	if n == 2 {
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	}
	return int64((1 - std) * float64(maxNodeScore))
}

// intolerablePreferNoSchedule is TaintToleration's raw score: the node's
// PreferNoSchedule taints the pod does not tolerate.
func intolerablePreferNoSchedule(pi *podInfo, ni *nodeInfo) int64 {
	var n int64
	for i := range ni.taints {
		t := &ni.taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule && !tolerates(pi.preferTolerations, t) {
			n++
		}
	}
	return n
}
