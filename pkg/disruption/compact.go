package disruption

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// A plan re-runs the solver many times over the same thousand nodes. When
// no pod in the cluster has pod (anti-)affinity, topology spread or host
// ports, the pods already on a node matter to the solver only through the
// room they take, so each node is handed to it as its remaining room and no
// pods: the same answers, without re-reading ten thousand pods per solve.

// compactOff turns compact views off (tests compare both ways).
var compactOff bool

// topologyFree reports whether no pod in the snapshot has pod affinity,
// pod anti-affinity, a topology spread constraint or a host port.
func topologyFree(pods []*corev1.Pod) bool {
	if compactOff {
		return false
	}
	for _, p := range pods {
		if a := p.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
			return false
		}
		if len(p.Spec.TopologySpreadConstraints) > 0 {
			return false
		}
		for _, c := range p.Spec.Containers {
			for _, port := range c.Ports {
				if port.HostPort != 0 {
					return false
				}
			}
		}
	}
	return true
}

// compacted is en with its pods folded into its allocatable.
func (w *working) compacted(en *scheduling.ExistingNode) *scheduling.ExistingNode {
	free := en.Allocatable.DeepCopy()
	if free == nil {
		free = corev1.ResourceList{}
	}
	if _, ok := free[corev1.ResourcePods]; !ok {
		free[corev1.ResourcePods] = *resource.NewQuantity(110, resource.DecimalSI) // the solver's default
	}
	cp := *en
	cp.Allocatable = w.fold(free, en.Pods)
	cp.Pods = nil
	return &cp
}

// compactedPlus is a compact view with one more pod folded in: an action
// that moves pods onto a node changes its view by those pods only, and
// re-reading every pod of every node that took one (the moved pods spread
// over hundreds of nodes) was most of a plan's allocations. Clamping at
// zero after each pod gives what clamping once after all gives, since room
// only shrinks.
func (w *working) compactedPlus(c *scheduling.ExistingNode, p *corev1.Pod) *scheduling.ExistingNode {
	cp := *c
	cp.Allocatable = w.fold(c.Allocatable.DeepCopy(), []*corev1.Pod{p})
	return &cp
}

// fold takes the pods' requests and one slot each out of free, never below
// zero, and returns it.
func (w *working) fold(free corev1.ResourceList, pods []*corev1.Pod) corev1.ResourceList {
	for _, p := range pods {
		for name, q := range w.podRequestList(p) {
			if cur, ok := free[name]; ok {
				cur.Sub(q)
				free[name] = cur
			}
		}
		slots := free[corev1.ResourcePods]
		slots.Sub(*resource.NewQuantity(1, resource.DecimalSI))
		free[corev1.ResourcePods] = slots
	}
	for name, q := range free {
		if q.Sign() < 0 {
			free[name] = *resource.NewQuantity(0, q.Format)
		}
	}
	return free
}

// solverNode is the view of a base node the solver gets.
func (w *working) solverNode(name string) *scheduling.ExistingNode {
	en := w.base[name]
	if !w.compact || en == nil {
		return en
	}
	if c, ok := w.compactCache[name]; ok {
		return c
	}
	c := w.compacted(en)
	w.compactCache[name] = c
	return c
}

// prefilterTypes drops from each pool the instance types its requirements
// exclude, by the rule the solver applies on every solve (a requirement on
// a key some type carries must match the type's label), so each of a
// plan's solves starts from the pool's own few hundred types instead of the
// whole catalog. Only used with compact views: then zones offered solely
// by excluded types play no part (no spread constraints).
func prefilterTypes(pools []*scheduling.NodePool) {
	keys := map[string]bool{corev1.LabelArchStable: true, corev1.LabelOSStable: true, corev1.LabelInstanceTypeStable: true}
	for _, p := range pools {
		for _, it := range p.InstanceTypes {
			for k := range it.Labels {
				keys[k] = true
			}
		}
	}
	delete(keys, corev1.LabelTopologyZone)
	delete(keys, nsv1.LabelCapacityType)
	for _, p := range pools {
		var kept []*catalog.InstanceType
		for _, it := range p.InstanceTypes {
			ok := true
			for _, k := range p.Requirements.Keys() {
				if !keys[k] {
					continue
				}
				v, present := it.Labels[k]
				if !p.Requirements[k].Matches(v, present) {
					ok = false
					break
				}
			}
			if ok {
				kept = append(kept, it)
			}
		}
		p.InstanceTypes = kept
	}
}
