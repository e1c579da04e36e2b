package scheduler

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// nodeTree keeps node names grouped by zone in the order they were added,
// like kube-scheduler's cache does. The snapshot's node list interleaves
// the zones (first node of every zone, then the second, ...), and because
// the scheduler stops filtering once it has found enough feasible nodes
// (percentageOfNodesToScore), that order decides which nodes a pod is
// scored against in clusters of 100 nodes or more.
type nodeTree struct {
	zones []string
	byZ   map[string][]string
	n     int
}

func newNodeTree() *nodeTree { return &nodeTree{byZ: map[string][]string{}} }

func (t *nodeTree) add(zone, name string) {
	names, ok := t.byZ[zone]
	if !ok {
		t.zones = append(t.zones, zone)
	}
	t.byZ[zone] = append(names, name)
	t.n++
}

func (t *nodeTree) remove(zone, name string) {
	names := t.byZ[zone]
	i := slices.Index(names, name)
	if i < 0 {
		return
	}
	names = slices.Delete(names, i, i+1)
	t.n--
	if len(names) > 0 {
		t.byZ[zone] = names
		return
	}
	delete(t.byZ, zone)
	t.zones = slices.DeleteFunc(t.zones, func(z string) bool { return z == zone })
}

// list returns the names round-robin over zones.
func (t *nodeTree) list() []string {
	out := make([]string, 0, t.n)
	for i := 0; len(out) < t.n; i++ {
		for _, z := range t.zones {
			if names := t.byZ[z]; i < len(names) {
				out = append(out, names[i])
			}
		}
	}
	return out
}

// zoneKey is the scheduler's utilnode.GetZoneKey: region and zone from the
// GA labels, falling back to the deprecated beta ones.
func zoneKey(n *corev1.Node) string {
	zone, ok := n.Labels[corev1.LabelTopologyZone]
	if !ok {
		zone = n.Labels[corev1.LabelFailureDomainBetaZone]
	}
	region, ok := n.Labels[corev1.LabelTopologyRegion]
	if !ok {
		region = n.Labels[corev1.LabelFailureDomainBetaRegion]
	}
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}
