package scheduler

import (
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
