package scheduler

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// spreadConstraint is a parsed topology spread constraint.
type spreadConstraint struct {
	maxSkew    int32
	minDomains int32
	key        string
	selector   labels.Selector // matchLabelKeys folded in
	// counter counts the matching live pods of the pod's namespace per node;
	// nil when the selector is empty or matches nothing, for which the
	// plugin counts no pods at all.
	counter       *podCounter
	honorAffinity bool // nodeAffinityPolicy (default Honor)
	honorTaints   bool // nodeTaintsPolicy (default Ignore)
}

func (c *spreadConstraint) count(ni *nodeInfo) int {
	if c.counter == nil {
		return 0
	}
	return int(c.counter.perNode.at(ni.id))
}

// The system default constraints (PodTopologySpreadArgs defaultingType
// System), applied as ScheduleAnyway to pods that declare no constraints of
// their own and have a controller whose selector can be found.
var systemDefaults = []corev1.TopologySpreadConstraint{
	{TopologyKey: corev1.LabelTopologyZone, MaxSkew: 5, WhenUnsatisfiable: corev1.ScheduleAnyway},
	{TopologyKey: corev1.LabelHostname, MaxSkew: 3, WhenUnsatisfiable: corev1.ScheduleAnyway},
}

// perPodLabels are labels a controller stamps on each pod individually and
// that its selector therefore never contains. pod-template-hash is NOT one
// of them: a ReplicaSet's selector includes it, so the default spreading of
// a Deployment counts the pods of the current ReplicaSet only, as in a real
// cluster.
var perPodLabels = []string{
	appsv1PodNameLabel, appsv1PodIndexLabel, "controller-revision-hash",
}

const (
	appsv1PodNameLabel  = "statefulset.kubernetes.io/pod-name"
	appsv1PodIndexLabel = "apps.kubernetes.io/pod-index"
)

// spreadConstraints returns the pod's constraints for one action and
// whether they are the system defaults.
func (s *Scheduler) spreadConstraints(p *corev1.Pod, action corev1.UnsatisfiableConstraintAction) ([]spreadConstraint, bool) {
	if len(p.Spec.TopologySpreadConstraints) > 0 {
		return s.parseSpread(p, p.Spec.TopologySpreadConstraints, action, nil), false
	}
	if action != corev1.ScheduleAnyway {
		return nil, false
	}
	sel := s.defaultSelector(p)
	if sel == nil || sel.Empty() {
		return nil, false
	}
	return s.parseSpread(p, systemDefaults, action, sel), true
}

func (s *Scheduler) parseSpread(p *corev1.Pod, tscs []corev1.TopologySpreadConstraint, action corev1.UnsatisfiableConstraintAction, fixed labels.Selector) []spreadConstraint {
	var out []spreadConstraint
	for i := range tscs {
		t := &tscs[i]
		if t.WhenUnsatisfiable != action {
			continue
		}
		sel := fixed
		if sel == nil {
			sel = selectorOf(t.LabelSelector)
			var extra []labels.Requirement
			for _, k := range t.MatchLabelKeys {
				if v, ok := p.Labels[k]; ok {
					if r, err := labels.NewRequirement(k, selection.Equals, []string{v}); err == nil {
						extra = append(extra, *r)
					}
				}
			}
			if len(extra) > 0 && !isNothing(sel) {
				sel = sel.Add(extra...)
			}
		}
		c := spreadConstraint{
			maxSkew:       t.MaxSkew,
			minDomains:    1,
			key:           t.TopologyKey,
			selector:      sel,
			honorAffinity: t.NodeAffinityPolicy == nil || *t.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
			honorTaints:   t.NodeTaintsPolicy != nil && *t.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor,
		}
		if t.MinDomains != nil {
			c.minDomains = *t.MinDomains
		}
		if !sel.Empty() && !isNothing(sel) {
			c.counter = s.counter([]clause{nsClause(p.Namespace, sel)}, true)
		}
		out = append(out, c)
	}
	return out
}

// defaultSelector stands in for the scheduler's DefaultSelector, which reads
// the selector of the pod's ReplicaSet, StatefulSet or ReplicationController
// (and of Services selecting it, which the simulator has none of). A
// selector registered with SetControllerSelector is used as is; otherwise
// the pod's own labels minus the per-pod ones stand for it, which selects
// the same replicas, since they all carry the template's labels.
func (s *Scheduler) defaultSelector(p *corev1.Pod) labels.Selector {
	owner := metav1.GetControllerOfNoCopy(p)
	if owner == nil {
		return nil
	}
	switch {
	case owner.APIVersion == "apps/v1" && (owner.Kind == "ReplicaSet" || owner.Kind == "StatefulSet"),
		owner.APIVersion == "v1" && owner.Kind == "ReplicationController":
	default:
		return nil
	}
	if sel, ok := s.controllers[controllerKey(p.Namespace, owner.Kind, owner.Name)]; ok {
		return sel
	}
	set := labels.Set{}
	for k, v := range p.Labels {
		set[k] = v
	}
	for _, k := range perPodLabels {
		delete(set, k)
	}
	return labels.SelectorFromSet(set)
}

// SetControllerSelector records the label selector of a ReplicaSet,
// StatefulSet or ReplicationController (kind as in the owner reference),
// used for the default topology spreading of its pods instead of their
// labels. A nil selector forgets it.
func (s *Scheduler) SetControllerSelector(namespace, kind, name string, sel *metav1.LabelSelector) {
	key := controllerKey(namespace, kind, name)
	if sel == nil {
		delete(s.controllers, key)
		return
	}
	s.controllers[key] = selectorOf(sel)
}

func controllerKey(ns, kind, name string) string { return ns + "/" + kind + "/" + name }

// hasAllKeys reports a node carrying every constraint's topology key.
func hasAllKeys(ni *nodeInfo, doms []*domainIndex) bool {
	for _, d := range doms {
		if d.at(ni.id) < 0 {
			return false
		}
	}
	return true
}

func (s *Scheduler) domainsOf(cs []spreadConstraint) []*domainIndex {
	doms := make([]*domainIndex, len(cs))
	for i := range cs {
		doms[i] = s.domains(cs[i].key)
	}
	return doms
}

// spreadFilter is PodTopologySpread's PreFilter state: per DoNotSchedule
// constraint, the matching pods in each eligible domain and the global
// minimum the skew is measured against.
type spreadFilter struct {
	constraints []spreadConstraint
	doms        []*domainIndex
	counts      [][]int // by constraint, by domain value
	minMatch    []int
	self        []bool
}

func (s *Scheduler) newSpreadFilter(pi *podInfo) *spreadFilter {
	cs, _ := s.spreadConstraints(pi.pod, corev1.DoNotSchedule)
	if len(cs) == 0 {
		return nil
	}
	f := &spreadFilter{constraints: cs, doms: s.domainsOf(cs), counts: make([][]int, len(cs)), minMatch: make([]int, len(cs)), self: make([]bool, len(cs))}
	eligible := make([][]bool, len(cs))
	for i := range cs {
		f.counts[i] = make([]int, len(f.doms[i].values))
		eligible[i] = make([]bool, len(f.doms[i].values))
		f.self[i] = cs[i].selector.Matches(labels.Set(pi.pod.Labels))
	}
	// A node is a domain member only if it has every constraint's key and
	// passes the constraint's inclusion policies.
	for _, ni := range s.nodeList() {
		if !hasAllKeys(ni, f.doms) {
			continue
		}
		for i := range cs {
			if !pi.includes(&cs[i], ni) {
				continue
			}
			j := f.doms[i].at(ni.id)
			f.counts[i][j] += cs[i].count(ni)
			eligible[i][j] = true
		}
	}
	for i := range cs {
		minimum, domains := math.MaxInt32, 0
		for j, n := range f.counts[i] {
			if eligible[i][j] {
				minimum = min(minimum, n)
				domains++
			}
		}
		if domains < int(cs[i].minDomains) {
			// Fewer eligible domains than minDomains: the global minimum is 0.
			minimum = 0
		}
		f.minMatch[i] = minimum
	}
	return f
}

// filter returns the rejection reason for the node, "" when it passes.
func (f *spreadFilter) filter(ni *nodeInfo) string {
	for i := range f.constraints {
		j := f.doms[i].at(ni.id)
		if j < 0 {
			return reasonSpreadLabel
		}
		self := 0
		if f.self[i] {
			self = 1
		}
		if f.counts[i][j]+self-f.minMatch[i] > int(f.constraints[i].maxSkew) {
			return reasonSpread
		}
	}
	return ""
}

// spreadScores is PodTopologySpread's PreScore, Score and NormalizeScore for
// the ScheduleAnyway constraints (the pod's own, else the system defaults).
// It returns nil when the plugin skips the pod.
func (s *Scheduler) spreadScores(pi *podInfo, feasible []*nodeInfo) []int64 {
	cs, systemDefault := s.spreadConstraints(pi.pod, corev1.ScheduleAnyway)
	if len(cs) == 0 {
		return nil
	}
	doms := s.domainsOf(cs)
	// Only the pod's own constraints require nodes to carry every key; with
	// the defaults a node without a zone label still spreads by hostname.
	requireAll := !systemDefault
	ignored := make([]bool, len(feasible))
	nIgnored := 0
	// Domains of non-hostname keys, one slot more for nodes without the key
	// (upstream files them under the value "").
	counts := make([][]int64, len(cs))
	present := make([][]bool, len(cs))
	for i := range cs {
		counts[i] = make([]int64, len(doms[i].values)+1)
		present[i] = make([]bool, len(doms[i].values)+1)
	}
	for j, ni := range feasible {
		if requireAll && !hasAllKeys(ni, doms) {
			ignored[j] = true
			nIgnored++
			continue
		}
		for i := range cs {
			if cs[i].key != corev1.LabelHostname {
				present[i][doms[i].orEmpty(doms[i].at(ni.id))] = true
			}
		}
	}
	weights := make([]float64, len(cs))
	for i := range cs {
		size := 0
		for _, p := range present[i] {
			if p {
				size++
			}
		}
		if cs[i].key == corev1.LabelHostname {
			size = len(feasible) - nIgnored
		}
		weights[i] = math.Log(float64(size + 2))
	}
	for _, ni := range s.nodeList() {
		if requireAll && !hasAllKeys(ni, doms) {
			continue
		}
		for i := range cs {
			if cs[i].key == corev1.LabelHostname {
				continue
			}
			if v := doms[i].orEmpty(doms[i].at(ni.id)); present[i][v] && pi.includes(&cs[i], ni) {
				counts[i][v] += int64(cs[i].count(ni))
			}
		}
	}
	scores := make([]int64, len(feasible))
	minScore, maxScore := int64(math.MaxInt64), int64(0)
	for j, ni := range feasible {
		if ignored[j] {
			continue
		}
		var sum float64
		for i := range cs {
			v := doms[i].at(ni.id)
			if v < 0 {
				continue
			}
			cnt := counts[i][v]
			if cs[i].key == corev1.LabelHostname {
				cnt = int64(cs[i].count(ni))
			}
			sum += float64(cnt)*weights[i] + float64(cs[i].maxSkew-1)
		}
		scores[j] = int64(math.Round(sum))
		minScore = min(minScore, scores[j])
		maxScore = max(maxScore, scores[j])
	}
	for j := range scores {
		switch {
		case ignored[j]:
			scores[j] = 0
		case maxScore == 0:
			scores[j] = maxNodeScore
		default:
			scores[j] = maxNodeScore * (maxScore + minScore - scores[j]) / maxScore
		}
	}
	return scores
}
