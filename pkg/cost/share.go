package cost

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// Shares is a fleet's $/h split by the namespaces whose pods request it;
// Idle is what no pod requests. The shares and Idle add up to the fleet.
type Shares struct {
	ByNamespace map[string]float64 `json:"byNamespace"`
	Idle        float64            `json:"idle"`
}

// Share splits one node's price among the namespaces of its pods. Each
// pod's weight is the mean, over cpu and memory, of its requests as a
// fraction of allocatable; weights that add up past 1 are scaled down.
// Finished pods request nothing.
func Share(price float64, allocatable corev1.ResourceList, pods []*corev1.Pod) Shares {
	out := Shares{ByNamespace: map[string]float64{}}
	cpu, mem := allocatable.Cpu().MilliValue(), allocatable.Memory().Value()
	weights := map[string]float64{}
	total := 0.0
	for _, p := range pods {
		if lifecycle.IsTerminal(p) {
			continue
		}
		reqCPU, reqMem := cpuMemory(p)
		w, dims := 0.0, 0
		if cpu > 0 {
			w += min(1, float64(reqCPU)/float64(cpu))
			dims++
		}
		if mem > 0 {
			w += min(1, float64(reqMem)/float64(mem))
			dims++
		}
		if dims == 0 {
			continue
		}
		w /= float64(dims)
		weights[p.Namespace] += w
		total += w
	}
	scale := 1.0
	if total > 1 {
		scale = 1 / total
	}
	used := 0.0
	for ns, w := range weights {
		out.ByNamespace[ns] = price * w * scale
		used += w * scale
	}
	out.Idle = price * max(0, 1-used)
	return out
}

// cpuMemory is the pod's effective cpu (milli) and memory requests. A pod
// of plain containers requests their sum, which is read directly: the
// fleet's cost is split every 30 s over every pod, and the general rules
// (init and sidecar containers, overhead, pod-level resources) build maps
// per pod; those pods go through resourcehelper.PodRequests.
func cpuMemory(p *corev1.Pod) (int64, int64) {
	if len(p.Spec.InitContainers) > 0 || len(p.Spec.Overhead) > 0 || p.Spec.Resources != nil {
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		return req.Cpu().MilliValue(), req.Memory().Value()
	}
	var cpu, mem int64
	for i := range p.Spec.Containers {
		r := p.Spec.Containers[i].Resources.Requests
		cpu += r.Cpu().MilliValue()
		mem += r.Memory().Value()
	}
	return cpu, mem
}

// Add adds o into s.
func (s *Shares) Add(o Shares) {
	if s.ByNamespace == nil {
		s.ByNamespace = map[string]float64{}
	}
	for ns, v := range o.ByNamespace {
		s.ByNamespace[ns] += v
	}
	s.Idle += o.Idle
}

// Fleet is the $/h of the Nodesmith fleet in snap (every live claim with a
// price, priced by Prices with its pool's types in types and the snapshot's
// commitments) and its split by namespace. A claim whose node has not
// registered is idle; a node's allocatable comes from the Node, else from
// the claim.
func Fleet(snap *provisioning.Snapshot, types map[string][]*catalog.InstanceType) (Breakdown, Shares) {
	live := Live(snap.NodeClaims)
	return FleetPriced(snap, live, Prices(live, PoolTypes(types), snap.Commitments))
}

// FleetPriced is Fleet with the live claims already priced (Prices).
func FleetPriced(snap *provisioning.Snapshot, live []*nsv1.NodeClaim, prices []Priced) (Breakdown, Shares) {
	shares := Shares{ByNamespace: map[string]float64{}}
	nodes := make(map[string]*corev1.Node, len(snap.Nodes))
	for _, n := range snap.Nodes {
		nodes[n.Name] = n
	}
	var items []Item
	for i, c := range live {
		if !prices[i].OK {
			continue
		}
		price := prices[i].PerHour
		items = append(items, itemOf(c, price))
		alloc := c.Status.Allocatable
		var pods []*corev1.Pod
		if c.Status.NodeName != "" {
			pods = snap.PodsByNode[c.Status.NodeName]
			if n := nodes[c.Status.NodeName]; n != nil && len(n.Status.Allocatable) > 0 {
				alloc = n.Status.Allocatable
			}
		}
		shares.Add(Share(price, alloc, pods))
	}
	return Sum(items), shares
}
