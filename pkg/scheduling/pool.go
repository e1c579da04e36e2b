package scheduling

import (
	"fmt"
	"math"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// slots enumerates the (zone, capacity type) pairs offerings are sold in, so
// a set of them is one uint64.
type slots struct {
	zone []int
	ct   []string
	ix   map[[2]string]int
}

const maxSlots = 64

func (s *slots) intern(zoneIx int, zone, ct string) (int, error) {
	k := [2]string{zone, ct}
	if i, ok := s.ix[k]; ok {
		return i, nil
	}
	if len(s.ct) == maxSlots {
		return 0, fmt.Errorf("more than %d distinct (zone, capacity type) offerings", maxSlots)
	}
	s.ix[k] = len(s.ct)
	s.zone = append(s.zone, zoneIx)
	s.ct = append(s.ct, ct)
	return len(s.ct) - 1, nil
}

// poolType is an instance type as one pool sees it.
type poolType struct {
	it       *catalog.InstanceType
	alloc    vec // allocatable minus the pool's DaemonSet overhead on it
	capacity vec // what the pool's limits count
	daemon   vec
	slots    uint64    // available offerings the pool's requirements allow
	price    []float64 // by slot index
	minPrice float64
	exotic   bool // catalog.InstanceType.Exotic: not counted toward a claim's floors
	// res are the type's reserved offerings (reserved.go), in catalog order.
	res []resOffering
}

type pool struct {
	np       *NodePool
	idx      int
	reqs     Requirements
	labels   map[string]string
	types    []*poolType // cheapest first
	nAll     int         // instance types before the pool's requirements
	slots    uint64
	limit    vec // -1 where unlimited
	used     vec // launched + planned capacity
	launched vec // capacity launched before this solve
	// limitMode: this pack call chooses types by limit share (limits.go).
	limitMode   bool
	limitShare  []float64 // by type index
	priceWeight float64
	chargeEst   []vec // chargeEstimate by type index, filled on first use
	hasLimit    bool
	// mvCharged: a claim is charged the options minValues makes it keep
	// (not with Options.ChargeExpectedLaunch, where it is charged its
	// expected launch).
	mvCharged bool
	// turns: with Options.ChargeExpectedLaunch, this solve's claims do not
	// all fit the limit at their largest options, so they are planned in
	// turns (buildClaims).
	turns bool

	dropped string         // why the pool's requirements leave no type, if so
	bySize  []int          // type indices, largest allocatable first
	mv      []minValuesKey // requirements with minValues > 1
	// flexTarget[ti]: a bin filled to type ti keeps its spot options and
	// minValues; flexTargetZone is the same within one zone.
	flexTarget, flexTargetZone []bool
	byIt                       map[*catalog.InstanceType]*poolType // built on first use
	// keySrcs says where the pool's nodes get each topology.keys value.
	keySrcs []keySrc

	// limitDims: the headroom of each limited dimension (0: not limited)
	// as limit mode was entered; leanOrder: type indices by the share of
	// it one node takes, least first (with minValues; see leanCharge).
	limitDims vec
	leanOrder []int
	leanCache map[string]vec
}

// newNodeHostname stands for the unknown hostname of a node not yet launched.
const newNodeHostname = "\x00new-node"

func (s *solver) buildPools() error {
	in := s.in
	pools := append([]*NodePool(nil), in.NodePools...)
	sort.SliceStable(pools, func(i, j int) bool {
		if pools[i].Weight != pools[j].Weight {
			return pools[i].Weight > pools[j].Weight
		}
		return pools[i].Name < pools[j].Name
	})
	for i, np := range pools {
		p := &pool{np: np, idx: i, reqs: np.Requirements.Clone(), labels: map[string]string{}, nAll: len(np.InstanceTypes)}
		if p.reqs == nil {
			p.reqs = Requirements{}
		}
		for k, v := range np.Labels {
			p.reqs.Add(NewRequirement(k, corev1.NodeSelectorOpIn, v))
			p.labels[k] = v
		}
		p.labels[nsv1.LabelNodePool] = np.Name
		for _, k := range p.reqs.Keys() {
			r := p.reqs[k]
			if _, typed := s.typeKeys[k]; typed || k == corev1.LabelTopologyZone || k == nsv1.LabelCapacityType {
				continue
			}
			if vals := r.Values(); r.Finite() && len(vals) == 1 {
				p.labels[k] = vals[0]
			}
		}
		if err := s.buildPoolTypes(p); err != nil {
			return err
		}
		s.buildFlex(p)
		p.limit = make(vec, s.d.n())
		p.used = make(vec, s.d.n())
		for j := range p.limit {
			p.limit[j] = -1
		}
		for name, q := range np.Limits {
			if name == nsv1.ResourceNodes {
				continue
			}
			if j, ok := s.d.index[name]; ok {
				p.limit[j] = quantityValue(name, q)
				p.hasLimit = true
			}
		}
		for name, q := range np.Usage {
			if j, ok := s.d.index[name]; ok {
				p.used[j] = quantityValue(name, q)
			}
		}
		p.launched = p.used.clone()
		s.nodeLimit = append(s.nodeLimit, -1)
		s.nodesUsed = append(s.nodesUsed, 0)
		if q, ok := np.Limits[nsv1.ResourceNodes]; ok {
			s.nodeLimit[i] = q.Value()
			p.hasLimit = true
		}
		if q, ok := np.Usage[nsv1.ResourceNodes]; ok {
			s.nodesUsed[i] = q.Value()
		}
		s.pools = append(s.pools, p)
	}
	return nil
}

func (s *solver) buildPoolTypes(p *pool) error {
	zoneReq := p.reqs.Get(corev1.LabelTopologyZone)
	ctReq := p.reqs.Get(nsv1.LabelCapacityType)
	rejectKey := map[string]int{}
	for _, it := range p.np.InstanceTypes {
		ok := true
		for _, k := range p.reqs.Keys() {
			if _, typed := s.typeKeys[k]; !typed {
				continue
			}
			v, present := it.Labels[k]
			if !p.reqs[k].Matches(v, present) {
				rejectKey[k]++
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		pt := &poolType{it: it, price: make([]float64, 0), minPrice: math.Inf(1), exotic: it.Exotic()}
		for _, o := range it.Offerings {
			if !o.Available {
				continue
			}
			if zoneReq != nil && !zoneReq.Has(o.Zone) || ctReq != nil && !ctReq.Has(o.CapacityType) {
				continue
			}
			si, err := s.slots.intern(s.topo.zoneIx[o.Zone], o.Zone, o.CapacityType)
			if err != nil {
				return err
			}
			for len(pt.price) <= si {
				pt.price = append(pt.price, math.Inf(1))
			}
			price := o.Price
			if o.CapacityType == nsv1.CapacityTypeReserved {
				if o.Reservation == nil {
					continue
				}
				pt.res = append(pt.res, resOffering{slot: si, zone: o.Zone, ref: o.Reservation})
				price = packingPrice(it)
			}
			if price < pt.price[si] {
				pt.price[si] = price
			}
			pt.slots |= 1 << si
			pt.minPrice = math.Min(pt.minPrice, price)
		}
		if pt.slots == 0 {
			rejectKey["offerings"]++
			continue
		}
		pt.alloc = s.d.fromList(it.Allocatable())
		pt.capacity = s.d.fromList(it.Capacity)
		// A limit on pods counts the types' pod capacity, like every other
		// resource; a type that does not state it counts as one pod.
		pt.capacity[dimPods] = 1
		if v, ok := it.Capacity[corev1.ResourcePods]; ok {
			pt.capacity[dimPods] = v.Value()
		}
		pt.daemon = s.daemonOverhead(p, it)
		pt.alloc.sub(pt.daemon)
		p.types = append(p.types, pt)
		p.slots |= pt.slots
	}
	sort.SliceStable(p.types, func(i, j int) bool {
		if p.types[i].minPrice != p.types[j].minPrice {
			return p.types[i].minPrice < p.types[j].minPrice
		}
		return p.types[i].it.Name < p.types[j].it.Name
	})
	if len(p.types) == 0 {
		keys := make([]string, 0, len(rejectKey))
		for k := range rejectKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		switch {
		case p.nAll == 0:
			p.dropped = "has no instance types"
		case len(keys) == 0:
			p.dropped = "has no instance types"
		case keys[0] == "offerings" && len(keys) == 1:
			p.dropped = fmt.Sprintf("has no available offering among its %d instance types for %s", p.nAll, zoneCTText(zoneReq, ctReq))
		default:
			parts := ""
			for _, k := range keys {
				if k == "offerings" {
					continue
				}
				if parts != "" {
					parts += "; "
				}
				parts += p.reqs[k].String()
			}
			p.dropped = fmt.Sprintf("requirements %s match none of its %d instance types", parts, p.nAll)
		}
	}
	return nil
}

func zoneCTText(zoneReq, ctReq *Requirement) string {
	z, c := "any zone", "any capacity type"
	if zoneReq != nil {
		z = zoneReq.String()
	}
	if ctReq != nil {
		c = ctReq.String()
	}
	return z + " and " + c
}

// daemonOverhead sums the requests of the DaemonSets whose pods would run on
// a node of type it launched by pool p: they tolerate the pool's taints and
// their required node affinity matches the node's labels for some offering.
func (s *solver) daemonOverhead(p *pool, it *catalog.InstanceType) vec {
	out := make(vec, s.d.n())
	for _, ds := range s.daemons {
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), append(append([]corev1.Taint(nil), p.np.Taints...), p.np.StartupTaints...), ds.pod.Spec.Tolerations, scheduleTaints, false); untolerated {
			continue
		}
		if ds.needsMatch {
			matched := false
			for _, o := range it.Offerings {
				node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: it.LabelsFor(o)}}
				for k, v := range p.labels {
					node.Labels[k] = v
				}
				if ok, _ := ds.affinity.Match(node); ok {
					matched = true
					break
				}
			}
			if !matched {
				continue
			}
		}
		out.add(ds.req)
	}
	return out
}

// daemon is a DaemonSet reduced to what overhead needs.
type daemon struct {
	pod        *corev1.Pod
	req        vec
	affinity   nodeaffinity.RequiredNodeAffinity
	needsMatch bool
}

func (s *solver) buildDaemons(list []*appsv1.DaemonSet) {
	sorted := append([]*appsv1.DaemonSet(nil), list...)
	sort.Slice(sorted, func(i, j int) bool {
		return sorted[i].Namespace+"/"+sorted[i].Name < sorted[j].Namespace+"/"+sorted[j].Name
	})
	for _, ds := range sorted {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: ds.Name, Labels: ds.Spec.Template.Labels}, Spec: ds.Spec.Template.Spec}
		d := &daemon{pod: pod, req: s.d.podRequests(pod), affinity: nodeaffinity.GetRequiredNodeAffinity(pod)}
		d.needsMatch = len(pod.Spec.NodeSelector) > 0 || pod.Spec.Affinity != nil && pod.Spec.Affinity.NodeAffinity != nil && pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
		s.daemons = append(s.daemons, d)
	}
}

// softTaint keeps the PreferNoSchedule taints.
func softTaint(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectPreferNoSchedule }

// scheduleTaints keeps the taint effects that stop a pod from scheduling.
func scheduleTaints(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}
