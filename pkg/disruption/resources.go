package disruption

import (
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// resvec is cpu (millicores), memory (bytes) and pod slots: enough for the
// quick necessary-condition checks that spare the solver hopeless
// candidates. The solver remains the judge of every action.
type resvec [3]int64

func fromList(l corev1.ResourceList) resvec {
	var v resvec
	if q, ok := l[corev1.ResourceCPU]; ok {
		v[0] = q.MilliValue()
	}
	if q, ok := l[corev1.ResourceMemory]; ok {
		v[1] = q.Value()
	}
	if q, ok := l[corev1.ResourcePods]; ok {
		v[2] = q.Value()
	} else {
		v[2] = 110
	}
	return v
}

func (v *resvec) add(o resvec) {
	for i := range v {
		v[i] += o[i]
	}
}

func (v resvec) fits(limit resvec) bool {
	for i := range v {
		if v[i] > limit[i] {
			return false
		}
	}
	return true
}

// podRequests is a pod's requests plus its slot, computed once per pod
// version: within a plan, and across plans through the previous plan (a
// pod's requests change only with its resourceVersion).
func (w *working) podRequests(p *corev1.Pod) resvec {
	return w.podRequest(p).v
}

// podRequestList is the pod's effective requests (resourcehelper's rules),
// cached as podRequests is. Read only.
func (w *working) podRequestList(p *corev1.Pod) corev1.ResourceList {
	return w.podRequest(p).list
}

func (w *working) podRequest(p *corev1.Pod) podRequest {
	if p.UID == "" {
		return requestOf(p)
	}
	if r, ok := w.requests[p.UID]; ok && r.rv == p.ResourceVersion {
		return r
	}
	if prev := w.in.Previous; prev != nil && prev.reuse != nil && p.ResourceVersion != "" {
		if r, ok := prev.reuse.requests[p.UID]; ok && r.rv == p.ResourceVersion {
			w.requests[p.UID] = r
			return r
		}
	}
	r := requestOf(p)
	w.requests[p.UID] = r
	return r
}

type podRequest struct {
	rv   string
	list corev1.ResourceList
	v    resvec
}

func requestOf(p *corev1.Pod) podRequest {
	list := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	v := fromList(list)
	v[2] = 1 // a pod takes one slot whatever it requests
	return podRequest{rv: p.ResourceVersion, list: list, v: v}
}

// need is what the pods ask for in total.
func (w *working) need(pods []*corev1.Pod) resvec {
	var v resvec
	for _, p := range pods {
		v.add(w.podRequests(p))
	}
	return v
}

// spare is a node's unrequested room, never negative.
func (w *working) spare(en *scheduling.ExistingNode) resvec {
	v := fromList(en.Allocatable)
	for _, p := range en.Pods {
		r := w.podRequests(p)
		for i := range v {
			v[i] -= r[i]
		}
	}
	for i := range v {
		v[i] = max(0, v[i])
	}
	return v
}

func (v resvec) isZero() bool { return v == resvec{} }

// spareRoom is the spare room of every node new pods may go to, by name,
// in the solver's node order.
type spareRoom struct {
	names  []string
	spares []resvec
}

func (w *working) spareRoom() spareRoom {
	var out spareRoom
	for _, name := range w.baseOrder {
		en, ok := w.base[name]
		if !ok || en.MarkedForDeletion || en.InFlight {
			continue
		}
		out.names = append(out.names, name)
		out.spares = append(out.spares, w.spare(en))
	}
	return out
}

// firstFitElsewhere places n's pods, largest cpu first, into the spare
// room of the other nodes (by requests alone: no labels, taints or
// topology) and returns what does not fit.
func (w *working) firstFitElsewhere(n *nodeInfo, room spareRoom) resvec {
	spares := make([]resvec, 0, len(room.spares))
	for i, name := range room.names {
		if name != n.name {
			spares = append(spares, room.spares[i])
		}
	}
	pods := append([]*corev1.Pod(nil), n.movable...)
	sort.SliceStable(pods, func(i, j int) bool { return w.podRequests(pods[i])[0] > w.podRequests(pods[j])[0] })
	var left resvec
	for _, p := range pods {
		r := w.podRequests(p)
		placed := false
		for i := range spares {
			if r.fits(spares[i]) {
				for d := range r {
					spares[i][d] -= r[d]
				}
				placed = true
				break
			}
		}
		if !placed {
			left.add(r)
		}
	}
	return left
}

// cheaperTypeHolds reports whether some instance type of a usable pool,
// sold for at most maxPrice in an available offering, has room for need
// on its own (allocatable, before DaemonSet overhead: a necessary
// condition for a replacement).
func (w *working) cheaperTypeHolds(need resvec, maxPrice float64) bool {
	for _, p := range w.pools {
		for _, it := range p.InstanceTypes {
			if !cheapEnough(it, maxPrice) {
				continue
			}
			if need.fits(fromList(it.Allocatable())) {
				return true
			}
		}
	}
	return false
}

// leastCostFor is a lower bound on what new nodes holding need cost
// together, however many: for each resource, need times the lowest price
// per unit of it any type of a usable pool sells (cheapest available
// offering over allocatable), the largest of those.
func (w *working) leastCostFor(need resvec) float64 {
	if w.unitPrices == nil {
		w.unitPrices = &[3]float64{math.Inf(1), math.Inf(1), math.Inf(1)}
		for _, p := range w.pools {
			for _, it := range p.InstanceTypes {
				price := math.Inf(1)
				for _, o := range it.Offerings {
					if o.Available {
						price = math.Min(price, o.Price)
					}
				}
				alloc := fromList(it.Allocatable())
				for d := range alloc {
					if alloc[d] > 0 {
						w.unitPrices[d] = math.Min(w.unitPrices[d], price/float64(alloc[d]))
					}
				}
			}
		}
	}
	least := 0.0
	for d := range need {
		if need[d] > 0 {
			least = math.Max(least, float64(need[d])*w.unitPrices[d])
		}
	}
	return least
}

func cheapEnough(it *catalog.InstanceType, maxPrice float64) bool {
	for _, o := range it.Offerings {
		if o.Available && o.Price <= maxPrice {
			return true
		}
	}
	return false
}
