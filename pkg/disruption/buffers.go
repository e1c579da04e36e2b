package disruption

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// placeBuffers takes each capacity buffer pod that fits on a registered
// node now as that node's pod (as if bound there), in the solver's order:
// the room it stands for then counts as used, so no node holding it is
// empty, no consolidation moves real pods into it, and removing the node
// means finding the room again elsewhere (or launching it, which
// consolidation only does when that still saves). Buffer pods that fit
// nowhere yet are the provisioner's to launch, not the planner's concern.
func (w *working) placeBuffers() {
	if len(w.in.BufferPods) == 0 {
		return
	}
	w.solves++
	plan, err := scheduling.Solve(scheduling.Input{Pods: w.in.BufferPods, Nodes: w.existing(nil), DaemonSets: w.in.Snapshot.DaemonSets, Options: w.opts.Solve})
	if err != nil {
		return // no room is kept for them this plan; the next plan tries again
	}
	for _, nom := range plan.Nominations {
		n, en := w.byNode[nom.Node], w.base[nom.Node]
		if n == nil || en == nil {
			continue
		}
		cp := *en
		cp.Pods = append(append(make([]*corev1.Pod, 0, len(en.Pods)+1), en.Pods...), nom.Pod)
		w.base[nom.Node] = &cp
		delete(w.compactCache, nom.Node)
		n.pods = append(append(make([]*corev1.Pod, 0, len(n.pods)+1), n.pods...), nom.Pod)
		n.movable = append(append(make([]*corev1.Pod, 0, len(n.movable)+1), n.movable...), nom.Pod)
	}
	for _, n := range w.nodes {
		sortPods(n.movable)
	}
}
