package provisioning

import (
	"fmt"
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Capacity buffers (autoscaling.x-k8s.io CapacityBuffer): room for virtual
// pods, copies of a template that never exist in the cluster. These are the
// rules every caller shares: what a buffer resolves to (ResolveBuffer, with
// auto sizing from arrivals, AutoReplicas), the virtual pods themselves
// (BufferPods), how the provisioner plans them after the real pending pods
// (BufferInput: lowest priority, real pods' plan first), and which pods are
// virtual (IsBufferPod) so nothing nominates, evicts or reports them.

// AnnotationBufferPod on a virtual pod names its CapacityBuffer
// (namespace/name).
const AnnotationBufferPod = nsv1.Group + "/capacity-buffer"

// DefaultAutoWindow is the window auto sizing counts arrivals in when the
// buffer does not say: about an instance's boot and registration.
const DefaultAutoWindow = 60 * time.Second

// AutoHistory is how far back auto sizing looks.
const AutoHistory = time.Hour

// BufferSource is what the controller read for a buffer: the chunk's pod
// template and, for a scalableRef, the workload's replicas.
type BufferSource struct {
	// Template is the chunk's shape; nil when it could not be read.
	Template *corev1.PodTemplateSpec
	// Generation of the PodTemplate read (podTemplateRef only).
	Generation *int64
	// ScalableReplicas are the scalableRef's replicas.
	ScalableReplicas *int32
	// Problem says why the template could not be read (missing object,
	// unsupported kind); empty when it was.
	Problem string
	// Arrivals are when the pods the buffer is for were created over the
	// last AutoHistory (auto sizing only).
	Arrivals []time.Time
}

// BufferResolution is what a buffer comes to now.
type BufferResolution struct {
	// Replicas is the number of chunks.
	Replicas int32
	// Pods are the virtual pods, one per chunk.
	Pods []*corev1.Pod
	// Ready is the ReadyForProvisioning condition.
	Ready metav1.Condition
	// Auto is the auto-sized count (auto buffers only; -1 otherwise).
	Auto int32
}

// ResolveBuffer is the one rule for how many chunks a buffer keeps:
// replicas; the percentage of the scalableRef's replicas (rounded up, at
// least one), the larger of the two when both are set; with neither, as
// many as limits allow; then capped by limits. An auto buffer
// (nodesmith.sh/buffer-sizing: auto) keeps at least AutoReplicas of its
// arrivals. A buffer of another provisioning strategy, or whose template
// cannot be read, keeps none, and its condition says why.
func ResolveBuffer(b *cbv1.CapacityBuffer, src BufferSource, now time.Time) BufferResolution {
	out := BufferResolution{Auto: -1}
	const t = cbv1.ConditionReadyForProvisioning
	if s := b.Spec.ProvisioningStrategy; s != nil && *s != cbv1.ActiveCapacity {
		out.Ready = lifecycle.Condition(t, false, "UnsupportedStrategy", fmt.Sprintf(
			"provisioningStrategy %q is not one Nodesmith keeps; it keeps %s", *s, cbv1.ActiveCapacity))
		return out
	}
	if src.Template == nil {
		out.Ready = lifecycle.Condition(t, false, "TemplateNotFound", src.Problem)
		return out
	}
	perChunk := podRequests(src.Template)
	var notes []string
	n, set := int32(0), false
	if r := b.Spec.Replicas; r != nil {
		n, set = *r, true
	}
	if p := b.Spec.Percentage; p != nil {
		if src.ScalableReplicas == nil {
			notes = append(notes, "percentage is ignored without scalableRef")
		} else {
			pn := max(int32(math.Ceil(float64(*src.ScalableReplicas)*float64(*p)/100)), 1)
			n, set = max(n, pn), true
		}
	}
	limit, limited := limitChunks(b.Spec.Limits, perChunk)
	if !set {
		if limited {
			n = limit
		} else {
			notes = append(notes, "neither replicas, percentage nor limits say how many chunks: none kept")
		}
	}
	if b.Annotations[cbv1.AnnotationSizing] == cbv1.SizingAuto {
		window := DefaultAutoWindow
		if w, err := time.ParseDuration(b.Annotations[cbv1.AnnotationAutoWindow]); err == nil && w > 0 {
			window = w
		} else if b.Annotations[cbv1.AnnotationAutoWindow] != "" {
			notes = append(notes, fmt.Sprintf("%s %q is not a positive duration; using %s", cbv1.AnnotationAutoWindow, b.Annotations[cbv1.AnnotationAutoWindow], window))
		}
		out.Auto = AutoReplicas(src.Arrivals, b.CreationTimestamp.Time, now, window)
		notes = append(notes, fmt.Sprintf("auto: %d pods arrived in the last hour, the 95th-percentile %s burst is %d", len(src.Arrivals), window, out.Auto))
		n = max(n, out.Auto)
	} else if v, ok := b.Annotations[cbv1.AnnotationSizing]; ok {
		notes = append(notes, fmt.Sprintf("%s %q is not a sizing Nodesmith knows (only %q); ignored", cbv1.AnnotationSizing, v, cbv1.SizingAuto))
	}
	if limited && n > limit {
		notes = append(notes, fmt.Sprintf("limits allow %d chunks", limit))
		n = limit
	}
	out.Replicas = n
	out.Pods = BufferPods(b, src.Template, n)
	msg := fmt.Sprintf("%d chunks", n)
	for _, s := range notes {
		msg += "; " + s
	}
	out.Ready = lifecycle.Condition(t, true, "", msg)
	return out
}

func podRequests(tmpl *corev1.PodTemplateSpec) corev1.ResourceList {
	return resourcehelper.PodRequests(&corev1.Pod{Spec: tmpl.Spec}, resourcehelper.PodResourcesOptions{})
}

// limitChunks is how many chunks fit in limits (per resource named, the
// fewest); false when there are no limits that bind.
func limitChunks(limits *cbv1.ResourceList, perChunk corev1.ResourceList) (int32, bool) {
	if limits == nil {
		return 0, false
	}
	n, limited := int32(math.MaxInt32), false
	for name, q := range *limits {
		per, ok := perChunk[corev1.ResourceName(name)]
		if !ok || per.IsZero() {
			continue
		}
		n, limited = min(n, int32(q.MilliValue()/per.MilliValue())), true
	}
	return n, limited
}

// AutoReplicas is auto sizing: the 95th percentile, over every window of
// the given length ending within the last hour (one a second) and after
// since (when the buffer was created: it has seen nothing before), of how
// many arrivals fell in it. The windows count idle seconds too, so a rare
// burst does not keep room for itself all day, and a steady trickle keeps
// room for its usual window.
func AutoReplicas(arrivals []time.Time, since, now time.Time, window time.Duration) int32 {
	from := now.Add(-AutoHistory)
	if since.After(from) {
		from = since
	}
	var ts []time.Time
	for _, a := range arrivals {
		if a.After(from) && !a.After(now) {
			ts = append(ts, a)
		}
	}
	if len(ts) == 0 {
		return 0
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	steps := int(now.Sub(from) / time.Second)
	counts := make([]int, 0, steps)
	lo, hi := 0, 0
	for i := 1; i <= steps; i++ {
		end := from.Add(time.Duration(i) * time.Second)
		start := end.Add(-window)
		for hi < len(ts) && !ts[hi].After(end) {
			hi++
		}
		for lo < hi && !ts[lo].After(start) {
			lo++
		}
		counts = append(counts, hi-lo)
	}
	if len(counts) == 0 {
		return 0
	}
	sort.Ints(counts)
	return int32(counts[(len(counts)*95+99)/100-1])
}

// BufferPods are a buffer's n virtual pods: the template's pod in the
// buffer's namespace, named and identified after the buffer and the
// chunk, marked with AnnotationBufferPod, Pending and unschedulable. They
// never exist in the cluster.
func BufferPods(b *cbv1.CapacityBuffer, tmpl *corev1.PodTemplateSpec, n int32) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, n)
	for i := range n {
		p := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
		p.Namespace = b.Namespace
		p.Name = fmt.Sprintf("capacitybuffer-%s-%d", b.Name, i)
		p.UID = types.UID(fmt.Sprintf("capacitybuffer/%s/%s/%d", b.Namespace, b.Name, i))
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[AnnotationBufferPod] = b.Namespace + "/" + b.Name
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
		out = append(out, p)
	}
	return out
}

// IsBufferPod reports whether p is a capacity buffer's virtual pod.
func IsBufferPod(p *corev1.Pod) bool {
	_, ok := p.Annotations[AnnotationBufferPod]
	return ok
}

// BufferInput is the solver's input for a cycle's buffer pods, after its
// real pending pods were planned (plan): the same nodes, with the pods plan
// nominated onto them, plus plan's new claims as in-flight nodes holding
// their pods (room of their smallest option, ClaimRoom), the pools charged
// for those claims. Real pods so take room first, and buffer pods only get
// what is left, which is what lowest priority means here.
func BufferInput(in scheduling.Input, plan *scheduling.Plan, pods []*corev1.Pod) scheduling.Input {
	out := in
	out.Pods = pods
	if plan == nil {
		return out
	}
	extra := map[string][]*corev1.Pod{}
	for _, nom := range plan.Nominations {
		extra[nom.Node] = append(extra[nom.Node], nom.Pod)
	}
	out.Nodes = make([]*scheduling.ExistingNode, 0, len(in.Nodes)+len(plan.NewClaims))
	for _, n := range in.Nodes {
		if add := extra[n.Name]; len(add) > 0 {
			cp := *n
			cp.Pods = append(append(make([]*corev1.Pod, 0, len(n.Pods)+len(add)), n.Pods...), add...)
			n = &cp
		}
		out.Nodes = append(out.Nodes, n)
	}
	charged := map[string]*scheduling.NodePool{}
	for _, p := range in.NodePools {
		charged[p.Name] = p
	}
	for _, cp := range plan.NewClaims {
		out.Nodes = append(out.Nodes, ClaimRoom(cp, true))
		if p := charged[cp.NodePool]; p != nil {
			cpy := *p
			cpy.Usage = p.Usage.DeepCopy()
			if cpy.Usage == nil {
				cpy.Usage = corev1.ResourceList{}
			}
			for name, q := range claimCapacity(cp) {
				cur := cpy.Usage[name]
				cur.Add(q)
				cpy.Usage[name] = cur
			}
			nodes := cpy.Usage[nsv1.ResourceNodes]
			nodes.Add(*resource.NewQuantity(1, resource.DecimalSI))
			cpy.Usage[nsv1.ResourceNodes] = nodes
			charged[cp.NodePool] = &cpy
		}
	}
	out.NodePools = make([]*scheduling.NodePool, len(in.NodePools))
	for i, p := range in.NodePools {
		out.NodePools[i] = charged[p.Name]
	}
	return out
}

func claimCapacity(cp *scheduling.ClaimPlan) corev1.ResourceList {
	its := make([]*catalog.InstanceType, 0, len(cp.Options))
	for _, o := range cp.Options {
		its = append(its, o.InstanceType)
	}
	return LargestCapacity(its)
}

// ClaimRoom is a planned claim as the solver sees an in-flight node: the
// room of its smallest option (per resource the least any option has, so a
// pod placed there fits whichever launches) less its DaemonSets' share,
// with its planned pods on it when withPods (else their room is free).
func ClaimRoom(cp *scheduling.ClaimPlan, withPods bool) *scheduling.ExistingNode {
	var room corev1.ResourceList
	for _, o := range cp.Options {
		alloc := o.InstanceType.Allocatable()
		if room == nil {
			room = alloc.DeepCopy()
			continue
		}
		for name, q := range room {
			if a, ok := alloc[name]; !ok {
				delete(room, name)
			} else if a.Cmp(q) < 0 {
				room[name] = a
			}
		}
	}
	// cp.Requests are the pods' requests plus the DaemonSets' share.
	daemons := cp.Requests.DeepCopy()
	for _, p := range cp.Pods {
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			if d, ok := daemons[name]; ok {
				d.Sub(q)
				daemons[name] = d
			}
		}
	}
	for name, q := range daemons {
		if r, ok := room[name]; ok {
			r.Sub(q)
			room[name] = r
		}
	}
	n := &scheduling.ExistingNode{Name: cp.Name, Labels: PlanLabels(cp), Taints: cp.Taints, Allocatable: room, InFlight: true}
	if withPods {
		n.Pods = cp.Pods
	}
	return n
}

// PlanLabels are the labels a planned claim's node will carry.
func PlanLabels(cp *scheduling.ClaimPlan) map[string]string {
	out := map[string]string{}
	for _, r := range cp.Requirements.NodeSelectorRequirements() {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			out[r.Key] = r.Values[0]
		}
	}
	for k, v := range cp.Labels {
		out[k] = v
	}
	return out
}
