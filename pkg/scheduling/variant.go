package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// maxVariants bounds the relaxation ladder of one class.
const maxVariants = 32

// variant is one rung of a class's relaxation ladder: the node requirements
// and topology constraints enforced at that rung.
type variant struct {
	reqs        Requirements
	constraints []*constraint
	// relaxed says what this rung gave up, for explanations.
	relaxed string
	// unsupported names a required constraint the solver cannot evaluate.
	unsupported string
	hostScoped  bool
	zoneScoped  bool
	// avoidSoftTaints: a pool with a PreferNoSchedule taint the pod does
	// not tolerate does not fit. Every rung has it but the last, which
	// tolerates them (Karpenter's last relaxation); existing nodes are not
	// affected (kube-scheduler places pods there, scoring them lower).
	avoidSoftTaints bool
	// fits[pool] is the compatibility with each pool, filled by the solver.
	fits []*poolFit
	// onNode[i] caches nodeCompatible for the solver's i-th node.
	onNode []int8
}

// preference is one soft constraint that a rung may keep or drop.
type preference struct {
	text  string
	node  Requirements // preferred node affinity term
	topo  *constraint  // preferred pod (anti-)affinity or ScheduleAnyway spread
	order int
}

// buildVariants builds c's relaxation ladder. softTaints says some pool has
// a PreferNoSchedule taint: every rung then avoids such pools the pod does
// not tolerate, and a last rung tolerates them (with PreferencePolicy
// Ignore, only that rung).
func (t *topology) buildVariants(c *podClass, policy PreferencePolicy, softTaints bool) error {
	p := c.rep
	alts := PodRequirements(p)
	var required []*constraint
	var prefs []preference
	unsupported := ""
	addTopo := func(kind constraintKind, term corev1.PodAffinityTerm, weight int32, req bool) error {
		g, err := t.groupFor(p, term.TopologyKey, term.LabelSelector, term.Namespaces, term.NamespaceSelector, term.MatchLabelKeys, term.MismatchLabelKeys)
		if err != nil {
			return err
		}
		k := &constraint{kind: kind, g: g, required: req, self: g.matches(p.Namespace, p.Labels)}
		k.text = fmt.Sprintf("%s %s", kind, g.desc)
		if kind == kindAntiAffinity && req {
			g.hasOwner = true
		}
		if g.scope == scopeOther && g.vk.ix >= maxValueKeys {
			if req && unsupported == "" {
				unsupported = fmt.Sprintf("%s uses topology key %s, but a solve supports at most %d keys besides %s and %s", k.text, g.key, maxValueKeys, corev1.LabelHostname, corev1.LabelTopologyZone)
			}
			return nil
		}
		if req {
			required = append(required, k)
		} else {
			prefs = append(prefs, preference{text: "preferred " + k.text, topo: k, order: int(kind)*1000 - int(weight)})
		}
		return nil
	}
	if a := p.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			for _, term := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				if err := addTopo(kindAffinity, term, 0, true); err != nil {
					return err
				}
			}
			for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				if err := addTopo(kindAffinity, w.PodAffinityTerm, w.Weight, false); err != nil {
					return err
				}
			}
		}
		if pa := a.PodAntiAffinity; pa != nil {
			for _, term := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				if err := addTopo(kindAntiAffinity, term, 0, true); err != nil {
					return err
				}
			}
			for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				if err := addTopo(kindAntiAffinity, w.PodAffinityTerm, w.Weight, false); err != nil {
					return err
				}
			}
		}
		if na := a.NodeAffinity; na != nil {
			for _, w := range na.PreferredDuringSchedulingIgnoredDuringExecution {
				prefs = append(prefs, preference{
					text:  fmt.Sprintf("preferred node affinity (weight %d)", w.Weight),
					node:  FromNodeSelectorRequirements(w.Preference.MatchExpressions),
					order: 2000 - int(w.Weight),
				})
			}
		}
	}
	for _, s := range p.Spec.TopologySpreadConstraints {
		g, err := t.groupFor(p, s.TopologyKey, s.LabelSelector, nil, nil, s.MatchLabelKeys, nil)
		if err != nil {
			return err
		}
		k := &constraint{kind: kindSpread, g: g, maxSkew: s.MaxSkew, self: g.matches(p.Namespace, p.Labels)}
		if s.MinDomains != nil {
			k.minDomains = *s.MinDomains
		}
		k.honorTaints = s.NodeTaintsPolicy != nil && *s.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
		k.ignoreAffinity = s.NodeAffinityPolicy != nil && *s.NodeAffinityPolicy == corev1.NodeInclusionPolicyIgnore
		k.required = s.WhenUnsatisfiable != corev1.ScheduleAnyway
		k.text = fmt.Sprintf("topology spread maxSkew %d %s", s.MaxSkew, g.desc)
		if g.scope == scopeOther && g.vk.ix >= maxValueKeys {
			if k.required && unsupported == "" {
				unsupported = fmt.Sprintf("%s uses topology key %s, but a solve supports at most %d keys besides %s and %s", k.text, g.key, maxValueKeys, corev1.LabelHostname, corev1.LabelTopologyZone)
			}
			continue
		}
		if k.required {
			required = append(required, k)
		} else {
			prefs = append(prefs, preference{text: "ScheduleAnyway " + k.text, topo: k, order: 3000})
		}
	}
	sort.SliceStable(prefs, func(i, j int) bool { return prefs[i].order < prefs[j].order })
	start := 0
	if policy == PreferenceIgnore {
		start = len(prefs)
	}
	limit := maxVariants
	avoid := softTaints && policy != PreferenceIgnore
	if avoid {
		limit -= len(alts) // room for the rung that tolerates them
	}
	add := func(level int, strict bool) {
		kept := prefs[level:]
		relaxed := ""
		if level > 0 {
			relaxed = "relaxed " + prefs[level-1].text
		}
		if softTaints && !strict {
			relaxed = strings.TrimPrefix(relaxed+"; tolerated PreferNoSchedule taints", "; ")
		}
		for _, alt := range alts {
			v := &variant{reqs: alt.Clone(), relaxed: relaxed, unsupported: unsupported, avoidSoftTaints: strict}
			v.constraints = append(v.constraints, required...)
			for _, pr := range kept {
				if pr.node != nil {
					v.reqs.AddAll(pr.node)
				}
				if pr.topo != nil {
					v.constraints = append(v.constraints, pr.topo)
				}
			}
			for _, k := range v.constraints {
				switch k.g.scope {
				case scopeHostname:
					v.hostScoped = true
				case scopeZone:
					v.zoneScoped = true
				}
			}
			c.variants = append(c.variants, v)
		}
	}
	for level := start; level <= len(prefs) && len(c.variants) < limit; level++ {
		add(level, avoid)
	}
	if avoid {
		add(len(prefs), false)
	}
	return nil
}
