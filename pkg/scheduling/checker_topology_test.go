package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// The topology half of the independent checker judges the plan's final
// state the way kube-scheduler judges the last pod it binds: every pod
// with a required topology rule is checked as if every other pod of the
// plan and of the cluster were already bound, counting every pod its
// selector matches (pending, nominated, on existing nodes, on claims)
// in every domain. kube-scheduler binds in an order we do not control
// and ignores nominations, so a plan is only valid if this final state
// is: a spread measured over the spreading pods alone, or an order in
// which the plan happens to work, is not enough.
//
// Claims may launch in any zone of their options. A pod on a claim whose
// options span zones has no fixed zone, so a pod counted by a zone rule
// (or holding one) on such a claim is a violation; the zones of every
// option count as spread domains (a node there makes the zone a domain
// with whatever it holds).

// tally is the count of one selector's matching pods per domain of one key.
type tally struct {
	all, fresh map[string]int // every matching pod / the plan's own
	total      int
	domains    map[string]bool // eligible domains (spread)
}

// selectorFor is the term's selector with matchLabelKeys and
// mismatchLabelKeys resolved against the owner's labels.
func selectorFor(owner *corev1.Pod, ls *metav1.LabelSelector, matchKeys, mismatchKeys []string) labels.Selector {
	if ls == nil {
		return labels.Nothing()
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing()
	}
	for _, k := range matchKeys {
		if v, ok := owner.Labels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.Equals, []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	for _, k := range mismatchKeys {
		if v, ok := owner.Labels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.NotEquals, []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	return sel
}

// termNamespaces is the namespaces an affinity term counts (nil: all).
func termNamespaces(owner *corev1.Pod, t corev1.PodAffinityTerm) []string {
	if t.NamespaceSelector != nil {
		return nil // no namespace labels here: read as every namespace
	}
	if len(t.Namespaces) == 0 {
		return []string{owner.Namespace}
	}
	return t.Namespaces
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

type topoChecker struct {
	nodes  []*checkNode
	cache  map[string]*tally
	errs   []string
	flaked map[string]bool // zone-uncertain reports already made
}

func (tc *topoChecker) fail(f string, a ...any) { tc.errs = append(tc.errs, fmt.Sprintf(f, a...)) }

// domainOf is the node's value of key; for a claim whose options give
// the key several values (zones, instance types and their labels) the
// value is unknown (ok, but pinned false). A claim whose options give
// the label to some types only may also launch without it: unknown too.
func domainOf(cn *checkNode, key string) (v string, ok, pinned bool) {
	v, ok = cn.node.Labels[key]
	if key == corev1.LabelHostname || cn.alts == nil {
		return v, ok, true
	}
	if vals := cn.alts[key]; len(vals) > 1 || len(vals) == 1 && !cn.allOptionsHave(key) {
		return v, ok, false
	}
	return v, ok, true
}

// allOptionsHave reports whether every option of a claim has label key.
func (cn *checkNode) allOptionsHave(key string) bool {
	return cn.nOpts == 0 || cn.hasKey[key] == cn.nOpts
}

// domainsOf is every value key may take on the node.
func domainsOf(cn *checkNode, key string) []string {
	if v, ok, pinned := domainOf(cn, key); pinned {
		if ok {
			return []string{v}
		}
		return nil
	}
	return cn.alts[key]
}

// count tallies the pods in namespaces (nil: all) matching sel per domain of
// key, over the nodes eligible says count. what names the rule for reports.
func (tc *topoChecker) count(id string, key string, namespaces []string, sel labels.Selector, eligible func(*checkNode) bool, what string) *tally {
	if t, ok := tc.cache[id]; ok {
		return t
	}
	t := &tally{all: map[string]int{}, fresh: map[string]int{}, domains: map[string]bool{}}
	for _, cn := range tc.nodes {
		if eligible != nil && !eligible(cn) {
			continue
		}
		dv, ok, pinned := domainOf(cn, key)
		if !ok && pinned {
			continue
		}
		for _, d := range domainsOf(cn, key) {
			t.domains[d] = true
		}
		for _, q := range cn.pods {
			if namespaces != nil && !containsString(namespaces, q.Namespace) || !sel.Matches(labels.Set(q.Labels)) {
				continue
			}
			t.total++
			if !pinned {
				if k := cn.name + "|" + what; !tc.flaked[k] {
					tc.flaked[k] = true
					tc.fail("claim %s may launch in %s %v but holds pod %s, which %s counts", cn.name, keyNoun(key), domainsOf(cn, key), q.Name, what)
				}
				continue
			}
			t.all[dv]++
			if cn.newPod[q] {
				t.fresh[dv]++
			}
		}
	}
	tc.cache[id] = t
	return t
}

func topologyViolations(nodes []*checkNode) []string {
	tc := &topoChecker{nodes: nodes, cache: map[string]*tally{}, flaked: map[string]bool{}}
	for _, cn := range nodes {
		for _, p := range cn.pods {
			tc.checkPod(cn, p)
		}
	}
	return tc.errs
}

func (tc *topoChecker) checkPod(cn *checkNode, p *corev1.Pod) {
	fresh := cn.newPod[p]
	if a := p.Spec.Affinity; a != nil {
		if aa := a.PodAntiAffinity; aa != nil {
			for _, term := range aa.RequiredDuringSchedulingIgnoredDuringExecution {
				tc.checkTerm(cn, p, term, true, fresh)
			}
		}
		if pa := a.PodAffinity; pa != nil && fresh {
			for _, term := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				tc.checkTerm(cn, p, term, false, fresh)
			}
		}
	}
	if !fresh {
		return
	}
	for _, sc := range p.Spec.TopologySpreadConstraints {
		if sc.WhenUnsatisfiable == corev1.DoNotSchedule {
			tc.checkSpread(cn, p, sc)
		}
	}
}

// checkTerm checks a required (anti-)affinity term of p on cn. Existing
// pods' anti-affinity only fails for the plan's own pods landing next to
// them (the symmetric rule kube-scheduler applies to incoming pods).
func (tc *topoChecker) checkTerm(cn *checkNode, p *corev1.Pod, term corev1.PodAffinityTerm, anti, fresh bool) {
	ns := termNamespaces(p, term)
	sel := selectorFor(p, term.LabelSelector, term.MatchLabelKeys, term.MismatchLabelKeys)
	kind := "affinity"
	if anti {
		kind = "anti-affinity"
	}
	what := fmt.Sprintf("%s %s on %s in %v", kind, sel, term.TopologyKey, ns)
	t := tc.count(strings.Join([]string{"term", term.TopologyKey, strings.Join(ns, ","), sel.String()}, "|"), term.TopologyKey, ns, sel, nil, what)
	dv, ok, pinned := domainOf(cn, term.TopologyKey)
	if !pinned && fresh {
		tc.fail("pod %s with %s is on claim %s, which may launch in %s %v", p.Name, what, cn.name, keyNoun(term.TopologyKey), domainsOf(cn, term.TopologyKey))
		return
	}
	self := 0
	if (ns == nil || containsString(ns, p.Namespace)) && sel.Matches(labels.Set(p.Labels)) {
		self = 1
	}
	if anti {
		if !ok {
			return
		}
		others := t.all[dv] - self
		if !fresh {
			others = t.fresh[dv]
		}
		if others > 0 {
			tc.fail("%s of %s (%s=%s): %d other matching pods there", what, p.Name, term.TopologyKey, dv, others)
		}
		return
	}
	if ok && t.all[dv]-self > 0 {
		return
	}
	if t.total-self == 0 && self == 1 {
		return // the first pod of a self-affine group may go anywhere
	}
	tc.fail("%s of %s (%s=%s) not met: %d matching pods elsewhere", what, p.Name, term.TopologyKey, dv, t.total-self)
}

// checkSpread checks a DoNotSchedule spread of p as kube-scheduler's
// filter does for the last pod bound: eligible nodes match p's node
// affinity (and its tolerations when taints are honoured) and carry the
// key; skew = matches in p's domain + p − the minimum over the eligible
// domains, p excluded; fewer domains than minDomains make the minimum 0.
func (tc *topoChecker) checkSpread(cn *checkNode, p *corev1.Pod, sc corev1.TopologySpreadConstraint) {
	sel := selectorFor(p, sc.LabelSelector, sc.MatchLabelKeys, nil)
	honorTaints := sc.NodeTaintsPolicy != nil && *sc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	ignoreAffinity := sc.NodeAffinityPolicy != nil && *sc.NodeAffinityPolicy == corev1.NodeInclusionPolicyIgnore
	aff := nodeaffinity.GetRequiredNodeAffinity(p)
	keys := make([]string, 0, len(p.Spec.TopologySpreadConstraints))
	for _, o := range p.Spec.TopologySpreadConstraints {
		keys = append(keys, o.TopologyKey)
	}
	eligible := func(n *checkNode) bool {
		for _, k := range keys {
			if _, ok := n.node.Labels[k]; !ok {
				return false
			}
		}
		if !ignoreAffinity {
			if ok, err := aff.Match(n.node); err != nil || !ok {
				return false
			}
		}
		if honorTaints {
			if _, bad := untolerated(n.node.Spec.Taints, p.Spec.Tolerations); bad {
				return false
			}
		}
		return true
	}
	sig := fmt.Sprintf("spread|%s|%s|%s|%v|%v|%v|%v|%s", sc.TopologyKey, p.Namespace, sel, ignoreAffinity, p.Spec.NodeSelector, nodeAffinityOf(p), honorTaints, tolerationsText(p, honorTaints))
	what := fmt.Sprintf("spread %s on %s", sel, sc.TopologyKey)
	t := tc.count(sig, sc.TopologyKey, []string{p.Namespace}, sel, eligible, what)
	dv, ok, pinned := domainOf(cn, sc.TopologyKey)
	if !ok {
		tc.fail("%s of %s: its node %s has no %s label", what, p.Name, cn.name, sc.TopologyKey)
		return
	}
	if !pinned {
		tc.fail("pod %s with %s is on claim %s, which may launch in %s %v", p.Name, what, cn.name, keyNoun(sc.TopologyKey), domainsOf(cn, sc.TopologyKey))
		return
	}
	self := 0
	if sel.Matches(labels.Set(p.Labels)) {
		self = 1
	}
	minC := -1
	for d := range t.domains {
		c := t.all[d]
		if d == dv {
			c -= self
		}
		if minC < 0 || c < minC {
			minC = c
		}
	}
	if sc.MinDomains != nil && int(*sc.MinDomains) > len(t.domains) {
		minC = 0
	}
	if skew := t.all[dv] - minC; skew > int(sc.MaxSkew) {
		ds := make([]string, 0, len(t.domains))
		for d := range t.domains {
			ds = append(ds, fmt.Sprintf("%s:%d", d, t.all[d]))
		}
		sort.Strings(ds)
		if len(ds) > 8 {
			ds = append(ds[:8], "…")
		}
		tc.fail("%s of %s in %s: skew %d > %d (%v)", what, p.Name, dv, skew, sc.MaxSkew, ds)
	}
}

// keyNoun names the domains of key in reports ("zones" for the zone key,
// which existing reports and tests use).
func keyNoun(key string) string {
	if key == corev1.LabelTopologyZone {
		return "zones"
	}
	return key + " values"
}

func nodeAffinityOf(p *corev1.Pod) any {
	if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil {
		return nil
	}
	return p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

func tolerationsText(p *corev1.Pod, honor bool) string {
	if !honor {
		return ""
	}
	return fmt.Sprint(p.Spec.Tolerations)
}
