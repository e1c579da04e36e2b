package scheduler

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// clause is one pod-matching rule of an affinity term or a spread
// constraint: a pod matches when its namespace is listed (or its
// namespace's labels match nsSelector) and its labels match selector.
type clause struct {
	namespaces []string        // sorted
	nsSelector labels.Selector // nil: only the listed namespaces
	selector   labels.Selector
	sig        string
}

func (c *clause) matches(p *corev1.Pod, nsLabels labels.Set) bool {
	if !slices.Contains(c.namespaces, p.Namespace) && (c.nsSelector == nil || !c.nsSelector.Matches(nsLabels)) {
		return false
	}
	return c.selector.Matches(labels.Set(p.Labels))
}

// matchesNothing reports a clause whose selector is labels.Nothing (a term
// with no labelSelector): it never matches, so it needs no counting.
func (c *clause) matchesNothing() bool {
	_, ok := c.selector.Requirements()
	return !ok
}

// anchor is an equality requirement every matching pod must carry, used to
// find the counters a pod can touch without testing them all.
func (c *clause) anchor() (string, bool) {
	reqs, ok := c.selector.Requirements()
	if !ok {
		return "", false
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if r.Values().Len() == 1 {
				return r.Key() + "=" + r.Values().UnsortedList()[0], true
			}
		}
	}
	return "", false
}

// termClause builds the clause of a pod affinity term owned by pod owner,
// with kube-scheduler's namespace rule (no namespaces and no
// namespaceSelector means the owner's namespace) and with matchLabelKeys /
// mismatchLabelKeys folded in from the owner's labels, as the API server
// does when it admits the pod (folding twice is harmless).
func termClause(owner *corev1.Pod, t *corev1.PodAffinityTerm) clause {
	sel := selectorOf(t.LabelSelector)
	var extra []labels.Requirement
	for _, k := range t.MatchLabelKeys {
		if v, ok := owner.Labels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.In, []string{v}); err == nil {
				extra = append(extra, *r)
			}
		}
	}
	for _, k := range t.MismatchLabelKeys {
		if v, ok := owner.Labels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.NotIn, []string{v}); err == nil {
				extra = append(extra, *r)
			}
		}
	}
	if len(extra) > 0 && !isNothing(sel) {
		sel = sel.Add(extra...)
	}
	c := clause{selector: sel}
	switch {
	case len(t.Namespaces) == 0 && t.NamespaceSelector == nil:
		c.namespaces = []string{owner.Namespace}
	default:
		c.namespaces = slices.Clone(t.Namespaces)
		slices.Sort(c.namespaces)
		c.namespaces = slices.Compact(c.namespaces)
		if t.NamespaceSelector != nil {
			c.nsSelector = selectorOf(t.NamespaceSelector)
		}
	}
	c.sig = clauseSig(c)
	return c
}

// nsClause matches pods of one namespace by selector (topology spread).
func nsClause(ns string, sel labels.Selector) clause {
	c := clause{namespaces: []string{ns}, selector: sel}
	c.sig = clauseSig(c)
	return c
}

func clauseSig(c clause) string {
	var b strings.Builder
	b.WriteString(strings.Join(c.namespaces, ","))
	b.WriteString("|")
	if c.nsSelector != nil {
		b.WriteString(selectorSig(c.nsSelector))
	} else {
		b.WriteString("\x00none")
	}
	b.WriteString("|")
	b.WriteString(selectorSig(c.selector))
	return b.String()
}

func selectorSig(s labels.Selector) string {
	if isNothing(s) {
		return "\x00nothing"
	}
	return s.String()
}

func isNothing(s labels.Selector) bool {
	_, ok := s.Requirements()
	return !ok
}

// selectorOf converts an API selector; a nil selector matches nothing and
// an unparsable one is treated the same (the API server rejects those).
func selectorOf(ls *metav1.LabelSelector) labels.Selector {
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing()
	}
	return s
}
