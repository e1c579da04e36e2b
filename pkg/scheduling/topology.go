package scheduling

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

type constraintKind int

const (
	kindSpread constraintKind = iota
	kindAffinity
	kindAntiAffinity
)

func (k constraintKind) String() string {
	switch k {
	case kindSpread:
		return "topology spread"
	case kindAffinity:
		return "pod affinity"
	default:
		return "pod anti-affinity"
	}
}

type scope int

const (
	scopeHostname scope = iota
	scopeZone
	// scopeOther is every other key: capacity type, instance-type labels,
	// NodePool labels (keys.go). Its groups count per value of the key.
	scopeOther
)

func scopeOf(key string) scope {
	switch key {
	case corev1.LabelHostname:
		return scopeHostname
	case corev1.LabelTopologyZone:
		return scopeZone
	default:
		return scopeOther
	}
}

// group counts the pods matching one (namespaces, selector) pair in the
// domains of one topology key. Spread, affinity and anti-affinity terms with
// the same selector share a group; owners counts only the pods carrying a
// required anti-affinity term on it, for the symmetric check.
type group struct {
	id       int
	key      string
	scope    scope
	allNS    bool
	ns       []string // sorted
	sel      labels.Selector
	desc     string
	vk       *valueKey // the key of a scopeOther group
	zone     []int32   // matching pods per zone index (per value index for scopeOther)
	owners   []int32   // anti-affinity owners per zone (value) index
	total    int32     // matching pods anywhere
	planned  []int32   // zone (value) quotas handed out this round, not yet placed
	hasOwner bool
	// Zone groups some pending pod spreads over (required, or kept as a
	// preference) are balanced: every pod the selector matches is placed
	// so the group stays within skew over dom, whoever owns the spread
	// (see balance.go).
	balanced   bool
	skew       int32  // smallest maxSkew of the spreads over the group
	minDomains int32  // largest minDomains among them
	dom        []bool // union of the spreading pods' domains
}

// size is the number of domains the group counts in.
func (g *group) size() int { return len(g.zone) }

// maxCount is the most matching pods (placed and planned) in one of the
// group's domains.
func (g *group) maxCount() int32 {
	m := int32(0)
	for z, in := range g.dom {
		if in {
			m = max(m, g.zone[z]+g.planned[z])
		}
	}
	return m
}

// minCount is the fewest matching pods (placed and planned) in the
// group's domains, 0 when it has fewer domains than minDomains.
func (g *group) minCount() int32 {
	first, m, n := true, int32(0), int32(0)
	for z, in := range g.dom {
		if !in {
			continue
		}
		n++
		if c := g.zone[z] + g.planned[z]; first || c < m {
			m, first = c, false
		}
	}
	if n < g.minDomains {
		return 0
	}
	return m
}

func (g *group) matches(ns string, lbls map[string]string) bool {
	if !g.allNS {
		i := sort.SearchStrings(g.ns, ns)
		if i >= len(g.ns) || g.ns[i] != ns {
			return false
		}
	}
	return g.sel.Matches(labels.Set(lbls))
}

// constraint is one topology rule a variant enforces.
type constraint struct {
	kind       constraintKind
	g          *group
	maxSkew    int32
	minDomains int32
	self       bool // the class's own pods count in g
	// honorTaints: nodeTaintsPolicy=Honor (spread only).
	honorTaints bool
	// ignoreAffinity: nodeAffinityPolicy=Ignore (spread only): every
	// domain counts, whatever the pod's node affinity.
	ignoreAffinity bool
	required       bool
	text           string
}

type topology struct {
	zones  []string
	zoneIx map[string]int
	groups []*group
	byKey  map[string]*group
	byTerm map[string]*group // by the term's raw text
	// keys are the topology keys other than hostname and zone, in order
	// of first use; keyIx finds them by name.
	keys  []*valueKey
	keyIx map[string]*valueKey
	// keysSized: the keys' values are known (see solver.initKeys).
	keysSized bool
}

func newTopology(zones []string) *topology {
	t := &topology{zones: zones, zoneIx: map[string]int{}, byKey: map[string]*group{}, byTerm: map[string]*group{}, keyIx: map[string]*valueKey{}}
	for i, z := range zones {
		t.zoneIx[z] = i
	}
	return t
}

func (t *topology) zoneOf(lbls map[string]string) int {
	if z, ok := lbls[corev1.LabelTopologyZone]; ok {
		if i, ok := t.zoneIx[z]; ok {
			return i
		}
	}
	return -1
}

// groupFor interns the group for a term of pod p. Terms are looked up by
// their raw text first: thousands of pods repeat a few selectors, and
// parsing each is most of the cost.
func (t *topology) groupFor(p *corev1.Pod, key string, sel *metav1.LabelSelector, namespaces []string, nsSel *metav1.LabelSelector, matchKeys, mismatchKeys []string) (*group, error) {
	var raw bytes.Buffer
	raw.WriteString(key)
	raw.WriteByte(0)
	if nsSel != nil {
		raw.WriteByte('*')
	} else if len(namespaces) == 0 {
		raw.WriteString(p.Namespace)
	}
	for _, n := range namespaces {
		raw.WriteString(n)
		raw.WriteByte(',')
	}
	raw.WriteByte(0)
	writeSelector(&raw, sel)
	for _, keys := range [][]string{matchKeys, mismatchKeys} {
		for _, k := range keys {
			v, ok := p.Labels[k]
			raw.WriteString(k)
			if ok {
				raw.WriteByte('=')
				raw.WriteString(v)
			}
			raw.WriteByte(',')
		}
		raw.WriteByte(0)
	}
	if g, ok := t.byTerm[raw.String()]; ok {
		return g, nil
	}
	g, err := t.parseGroup(p, key, sel, namespaces, nsSel, matchKeys, mismatchKeys)
	if err == nil {
		t.byTerm[raw.String()] = g
	}
	return g, err
}

func (t *topology) parseGroup(p *corev1.Pod, key string, sel *metav1.LabelSelector, namespaces []string, nsSel *metav1.LabelSelector, matchKeys, mismatchKeys []string) (*group, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("label selector of pod %s: %w", podKey(p), err)
	}
	if sel == nil {
		s = labels.Nothing()
	}
	for _, k := range matchKeys {
		if v, ok := p.Labels[k]; ok {
			r, err := labels.NewRequirement(k, selection.In, []string{v})
			if err == nil {
				s = s.Add(*r)
			}
		}
	}
	for _, k := range mismatchKeys {
		if v, ok := p.Labels[k]; ok {
			r, err := labels.NewRequirement(k, selection.NotIn, []string{v})
			if err == nil {
				s = s.Add(*r)
			}
		}
	}
	allNS := nsSel != nil // a namespace selector is evaluated as "all namespaces" (no namespace labels here)
	ns := []string{}
	if !allNS {
		ns = append(ns, namespaces...)
		if len(ns) == 0 {
			ns = append(ns, p.Namespace)
		}
		ns = sortedUnique(ns)
	}
	nsText := "*"
	if !allNS {
		nsText = strings.Join(ns, ",")
	}
	id := key + "|" + nsText + "|" + s.String()
	if g, ok := t.byKey[id]; ok {
		return g, nil
	}
	g := &group{
		id: len(t.groups), key: key, scope: scopeOf(key), allNS: allNS, ns: ns, sel: s,
		desc:    fmt.Sprintf("%s on %s", s.String(), key),
		zone:    make([]int32, len(t.zones)),
		owners:  make([]int32, len(t.zones)),
		planned: make([]int32, len(t.zones)),
	}
	if g.scope == scopeOther {
		g.vk = t.key(key)
		g.zone, g.owners, g.planned = nil, nil, nil
		if t.keysSized {
			t.sizeGroup(g)
		}
	}
	t.byKey[id] = g
	t.groups = append(t.groups, g)
	return g, nil
}

// hostCount is one group's tally on one node or planned claim.
type hostCount struct {
	g      int32
	n      int32
	owners int32
	// limit is the smallest maxSkew of the hostname spreads over g held by
	// pods on the host (0: none). Every pod g matches counts, so a pod
	// joining the host must keep n within it, whatever its own rules:
	// kube-scheduler measures the spread of each pod over all matching
	// pods, and the minimum over nodes is taken as 0.
	limit int32
}

// host is the topology-visible state of an existing node or a planned claim.
type host struct {
	counts []hostCount
	ports  []hostPort
	zone   int // zone index, -1 while a claim is not pinned
	// vals is the host's value index of each topology.keys entry:
	// valUnpinned while a claim has not chosen one, valAbsent when the
	// node has no such label.
	vals []int32
}

// val is the host's value of key ki.
func (h *host) val(ki int) int32 {
	if ki >= len(h.vals) {
		return valUnpinned
	}
	return h.vals[ki]
}

func (h *host) count(g int) (n, owners int32) {
	for i := range h.counts {
		if int(h.counts[i].g) == g {
			return h.counts[i].n, h.counts[i].owners
		}
	}
	return 0, 0
}

// get is the host's tally of g (zero when it has none).
func (h *host) get(g int) hostCount {
	for i := range h.counts {
		if int(h.counts[i].g) == g {
			return h.counts[i]
		}
	}
	return hostCount{}
}

// restrict lowers the host's spread limit on g to skew.
func (h *host) restrict(g int, skew int32) {
	for i := range h.counts {
		if int(h.counts[i].g) == g {
			if l := h.counts[i].limit; l == 0 || skew < l {
				h.counts[i].limit = skew
			}
			return
		}
	}
	h.counts = append(h.counts, hostCount{g: int32(g), limit: skew})
}

func (h *host) inc(g int, n, owners int32) {
	for i := range h.counts {
		if int(h.counts[i].g) == g {
			h.counts[i].n += n
			h.counts[i].owners += owners
			return
		}
	}
	h.counts = append(h.counts, hostCount{g: int32(g), n: n, owners: owners})
}
