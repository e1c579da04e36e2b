package convert

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// nodePool converts a karpenter.sh/v1beta1 or v1 NodePool. Both versions go
// through one reader: v1beta1's places (disruption.expireAfter, the
// template's kubelet, nodeClassRef.apiVersion) are read wherever they are.
func (c *converter) nodePool(doc map[string]any) {
	root := c.fields(doc, "")
	root.ignore("apiVersion", "kind", "status")
	np := &nsv1.NodePool{TypeMeta: metav1.TypeMeta{APIVersion: nsv1.GroupVersion.String(), Kind: "NodePool"}}
	np.Name, np.Labels, np.Annotations = c.metadata(root.obj("metadata"))
	spec := root.obj("spec")
	if spec == nil {
		c.errorf("spec is missing")
		root.done()
		return
	}
	tmpl := spec.obj("template")
	if tmpl == nil {
		c.errorf("spec.template is missing")
	} else {
		c.template(np, tmpl)
	}
	if d := spec.obj("disruption"); d != nil {
		c.disruption(np, d)
	}
	spec.decode("limits", &np.Spec.Limits)
	if room, why := KarpenterPoolRoom(corev1.ResourceList(np.Spec.Limits), nil); !room {
		c.warn("spec.limits", fmt.Sprintf("leave the pool no room (%s): Nodesmith would launch nothing for it; if the limit was set to zero for the cut-over from Karpenter, convert the manifests from before it or set the limit you mean", why))
	}
	spec.decode("weight", &np.Spec.Weight)
	spec.decode("replicas", &np.Spec.Replicas) // a static pool, as in Karpenter v1.8
	spec.done()
	root.done()
	c.out = append(c.out, np)
}

func (c *converter) template(np *nsv1.NodePool, tmpl *fields) {
	if md := tmpl.obj("metadata"); md != nil {
		var labels, anns map[string]string
		md.decode("labels", &labels)
		md.decode("annotations", &anns)
		np.Spec.Template.ObjectMeta.Labels = c.mapKeys(labels, md.at("labels"), mapLabelKey, true)
		np.Spec.Template.ObjectMeta.Annotations = c.mapKeys(anns, md.at("annotations"), mapAnnotationKey, false)
		md.done()
	}
	spec := tmpl.obj("spec")
	if spec == nil {
		c.errorf("spec.template.spec is missing")
		return
	}
	ts := &np.Spec.Template.Spec
	for _, r := range spec.list("requirements") {
		if req, ok := c.requirement(r); ok {
			ts.Requirements = append(ts.Requirements, req)
		}
	}
	spec.decode("taints", &ts.Taints)
	spec.decode("startupTaints", &ts.StartupTaints)
	spec.decode("terminationGracePeriod", &ts.TerminationGracePeriod)
	if v, ok := spec.raw("expireAfter"); ok {
		c.duration(&ts.ExpireAfter, v, spec.at("expireAfter"))
	}
	ts.NodeClassRef = c.nodeClassRef(spec.obj("nodeClassRef"))
	if k := spec.obj("kubelet"); k != nil {
		kc := c.kubeletConfig(k)
		if ts.NodeClassRef != nil && kc != nil {
			c.kubelet = append(c.kubelet, kubeletMove{pool: np, class: ts.NodeClassRef.Name, config: kc, from: c.current})
		}
	}
	spec.done()
}

// mapKeys renames the keys of a template's labels or annotations.
// Restricted labels (set per node by the system) are dropped with a warning.
func (c *converter) mapKeys(in map[string]string, path string, mapKey func(string) (string, bool), labels bool) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := map[string]string{}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := in[k]
		nk, ok := mapKey(k)
		if !ok {
			c.warn(path+"."+k, "has no Nodesmith equivalent; dropped")
			continue
		}
		if _, restricted := nsv1.RestrictedLabels[nk]; labels && restricted {
			c.warn(path+"."+k, fmt.Sprintf("is set per node by Nodesmith (%s); dropped", nk))
			continue
		}
		out[nk] = v
	}
	return out
}

// requirement converts one requirement; ok is false when it is dropped.
func (c *converter) requirement(f *fields) (nsv1.NodeSelectorRequirementWithMinValues, bool) {
	var r nsv1.NodeSelectorRequirementWithMinValues
	key := f.str("key")
	r.Operator = corev1.NodeSelectorOperator(f.str("operator"))
	f.decode("values", &r.Values)
	f.decode("minValues", &r.MinValues)
	f.done()
	nk, ok := mapLabelKey(key)
	if !ok {
		c.warn(f.path, fmt.Sprintf("on %s has no Nodesmith equivalent (no node carries that label); dropped, so the pool is no longer narrowed by it", key))
		return r, false
	}
	if _, restricted := nsv1.RestrictedLabels[nk]; restricted {
		c.warn(f.path, fmt.Sprintf("on %s: Nodesmith sets %s per node and refuses it in a pool; dropped", key, nk))
		return r, false
	}
	r.Key = nk
	if nk == nsv1.LabelCapacityType {
		var kept []string
		for _, v := range r.Values {
			if v == "reserved" {
				c.warn(f.path, "value reserved (capacity reservations) has no Nodesmith equivalent; dropped")
				continue
			}
			kept = append(kept, v)
		}
		if len(kept) == 0 && r.Operator == corev1.NodeSelectorOpIn {
			c.errorf("%s: the pool only launches reserved capacity, which Nodesmith does not buy", f.path)
			return r, false
		}
		r.Values = kept
		if r.MinValues != nil && *r.MinValues > len(kept) && r.Operator == corev1.NodeSelectorOpIn {
			c.warn(f.path, fmt.Sprintf("minValues %d lowered to %d with reserved gone", *r.MinValues, len(kept)))
			n := len(kept)
			r.MinValues = &n
		}
	}
	return r, true
}

// nodeClassRef points at the aws.nodesmith.sh EC2NodeClass of the same
// name. v1beta1 spelled the group as apiVersion and let it and kind default.
func (c *converter) nodeClassRef(f *fields) *nsv1.NodeClassReference {
	if f == nil {
		c.errorf("spec.template.spec.nodeClassRef is missing")
		return nil
	}
	name, kind, group := f.str("name"), f.str("kind"), f.str("group")
	if av := f.str("apiVersion"); av != "" {
		group, _, _ = strings.Cut(av, "/")
	}
	f.done()
	if (group != "" && group != karpenterAWSGroup) || (kind != "" && kind != "EC2NodeClass") {
		c.errorf("%s: refers to %s %s, which has no Nodesmith equivalent (only karpenter.k8s.aws EC2NodeClass)", f.path, group, kind)
		return nil
	}
	return &nsv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: name}
}

func (c *converter) disruption(np *nsv1.NodePool, f *fields) {
	d := &np.Spec.Disruption
	switch p := f.str("consolidationPolicy"); p {
	case "":
	case "WhenUnderutilized", string(nsv1.ConsolidationPolicyWhenEmptyOrUnderutilized):
		d.ConsolidationPolicy = nsv1.ConsolidationPolicyWhenEmptyOrUnderutilized
	case string(nsv1.ConsolidationPolicyWhenEmpty):
		d.ConsolidationPolicy = nsv1.ConsolidationPolicyWhenEmpty
	default:
		c.errorf("%s: unknown consolidationPolicy %q", f.at("consolidationPolicy"), p)
	}
	if v, ok := f.raw("consolidateAfter"); ok {
		c.duration(&d.ConsolidateAfter, v, f.at("consolidateAfter"))
	}
	if v, ok := f.raw("expireAfter"); ok {
		if !np.Spec.Template.Spec.ExpireAfter.IsZero() {
			c.warn(f.at("expireAfter"), "is also set in spec.template.spec; the template's value is kept")
		} else {
			c.duration(&np.Spec.Template.Spec.ExpireAfter, v, f.at("expireAfter"))
			if !np.Spec.Template.Spec.ExpireAfter.IsNever() {
				c.warn(f.at("expireAfter"), "moves to spec.template.spec.expireAfter and becomes forceful, as in Karpenter v1: budgets no longer pace expiry, and PDBs and do-not-disrupt hold an expired node's drain only until spec.template.spec.terminationGracePeriod (unbounded when unset)")
			}
		}
	}
	for _, b := range f.list("budgets") {
		var out nsv1.Budget
		out.Nodes = b.str("nodes")
		out.Schedule = b.strPtr("schedule")
		b.decode("duration", &out.Duration)
		b.decode("reasons", &out.Reasons)
		b.done()
		listed := len(out.Reasons) > 0
		kept := out.Reasons[:0]
		for _, r := range out.Reasons {
			if r == nsv1.DisruptionReasonExpired {
				c.warn(b.at("reasons"), "drops Expired: expiry is forceful and no budget holds it")
				continue
			}
			kept = append(kept, r)
		}
		out.Reasons = kept
		if len(kept) == 0 && listed {
			// Only Expired was listed: the budget held nothing else.
			continue
		}
		if out.Nodes == "" {
			out.Nodes = "10%"
		}
		d.Budgets = append(d.Budgets, out)
	}
	f.ignore("utilizationThreshold")
	if _, ok := f.m["utilizationThreshold"]; ok {
		c.warn(f.at("utilizationThreshold"), "has no Nodesmith equivalent; dropped")
	}
	f.done()
}

// duration reads a Karpenter duration ("720h", "Never") into d.
func (c *converter) duration(d *nsv1.NillableDuration, v any, path string) {
	b, err := json.Marshal(v)
	if err == nil {
		err = d.UnmarshalJSON(b)
	}
	if err != nil {
		c.errorf("%s: %v", path, err)
	}
}
