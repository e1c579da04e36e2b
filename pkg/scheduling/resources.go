package scheduling

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Resource vectors are int64 slices indexed by a per-solve dimension table:
// cpu in millicores, memory and ephemeral-storage in bytes, pods as a count,
// then every extended resource some pod requests or some NodePool limits
// (in its canonical units).
// Quantities are converted once, when classes and types are built.
const (
	dimCPU = iota
	dimMemory
	dimPods
	dimEphemeral
	baseDims
)

type vec []int64

type dims struct {
	names []corev1.ResourceName
	index map[corev1.ResourceName]int
}

func newDims(extended []corev1.ResourceName) *dims {
	d := &dims{index: map[corev1.ResourceName]int{}}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
		d.index[n] = len(d.names)
		d.names = append(d.names, n)
	}
	sort.Slice(extended, func(i, j int) bool { return extended[i] < extended[j] })
	for _, n := range extended {
		if _, ok := d.index[n]; !ok {
			d.index[n] = len(d.names)
			d.names = append(d.names, n)
		}
	}
	return d
}

func (d *dims) n() int { return len(d.names) }

func quantityValue(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// fromList converts a ResourceList; resources outside the table are ignored
// (no pod asks for them and no pool limits them).
func (d *dims) fromList(l corev1.ResourceList) vec {
	v := make(vec, d.n())
	for name, q := range l {
		if i, ok := d.index[name]; ok {
			v[i] = quantityValue(name, q)
		}
	}
	return v
}

func (d *dims) toList(v vec) corev1.ResourceList {
	out := make(corev1.ResourceList, len(v))
	for i, x := range v {
		if x == 0 {
			continue
		}
		out[d.names[i]] = d.quantity(i, x)
	}
	return out
}

// quantity turns dimension i's value back into a Quantity in the
// resource's usual format (cpu in millicores, bytes in binary units).
func (d *dims) quantity(i int, x int64) resource.Quantity {
	switch d.names[i] {
	case corev1.ResourceCPU:
		return *resource.NewMilliQuantity(x, resource.DecimalSI)
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return *resource.NewQuantity(x, resource.BinarySI)
	default:
		return *resource.NewQuantity(x, resource.DecimalSI)
	}
}

func (d *dims) format(i int, x int64) string {
	switch d.names[i] {
	case corev1.ResourceCPU:
		return fmt.Sprintf("%.3g cpu", float64(x)/1000)
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return fmt.Sprintf("%.4gGi %s", float64(x)/(1<<30), d.names[i])
	default:
		return fmt.Sprintf("%d %s", x, d.names[i])
	}
}

func (v vec) add(o vec) {
	for i := range v {
		v[i] += o[i]
	}
}

func (v vec) sub(o vec) {
	for i := range v {
		v[i] -= o[i]
	}
}

// fitsIn reports v+extra ≤ limit in every dimension.
func (v vec) fitsWith(extra, limit vec) bool {
	for i := range v {
		if v[i]+extra[i] > limit[i] {
			return false
		}
	}
	return true
}

func (v vec) fits(limit vec) bool {
	for i := range v {
		if v[i] > limit[i] {
			return false
		}
	}
	return true
}

func (v vec) clone() vec { return append(vec(nil), v...) }

// firstExceeding returns the first dimension where v > limit, or -1.
func (v vec) firstExceeding(limit vec) int {
	for i := range v {
		if v[i] > limit[i] {
			return i
		}
	}
	return -1
}

func resourceQuantity(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

// podRequests adds a pod's effective requests into v: the larger of the sum
// of regular and restartable-init (sidecar) containers and the peak of any
// one-shot init container (plus the sidecars started before it), plus the
// pod overhead, plus one "pods" slot. A container limit without a request
// counts as the request, as the API server defaults it.
func (d *dims) podRequests(p *corev1.Pod) vec {
	v := make(vec, d.n())
	if len(p.Spec.InitContainers) == 0 {
		// Most pods: the containers' sum, the overhead and a slot.
		for i := range p.Spec.Containers {
			d.containerRequests(&p.Spec.Containers[i], v)
		}
		for name, q := range p.Spec.Overhead {
			if i, ok := d.index[name]; ok {
				v[i] += quantityValue(name, q)
			}
		}
		v[dimPods] = 1
		return v
	}
	tmp := make(vec, d.n())
	sidecars := make(vec, d.n())
	initPeak := make(vec, d.n())
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		clear(tmp)
		d.containerRequests(c, tmp)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars.add(tmp)
			for j := range initPeak {
				initPeak[j] = max(initPeak[j], sidecars[j])
			}
			continue
		}
		for j := range initPeak {
			initPeak[j] = max(initPeak[j], sidecars[j]+tmp[j])
		}
	}
	for i := range p.Spec.Containers {
		d.containerRequests(&p.Spec.Containers[i], v)
	}
	v.add(sidecars)
	for j := range v {
		v[j] = max(v[j], initPeak[j])
	}
	for name, q := range p.Spec.Overhead {
		if i, ok := d.index[name]; ok {
			v[i] += quantityValue(name, q)
		}
	}
	v[dimPods] = 1
	return v
}

func (d *dims) containerRequests(c *corev1.Container, into vec) {
	for name, q := range c.Resources.Requests {
		if i, ok := d.index[name]; ok {
			into[i] += quantityValue(name, q)
		}
	}
	for name, q := range c.Resources.Limits {
		if _, set := c.Resources.Requests[name]; set {
			continue
		}
		if i, ok := d.index[name]; ok {
			into[i] += quantityValue(name, q)
		}
	}
}

// extendedNames lists the non-base resource names a pod asks for.
func extendedNames(p *corev1.Pod, seen map[corev1.ResourceName]struct{}) {
	add := func(l corev1.ResourceList) {
		// Most pods ask for cpu and memory only: a few lookups rule that
		// out without walking the map.
		known := 0
		for _, n := range [...]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
			if _, ok := l[n]; ok {
				known++
			}
		}
		if known == len(l) {
			return
		}
		for name := range l {
			switch name {
			case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
			default:
				seen[name] = struct{}{}
			}
		}
	}
	for i := range p.Spec.Containers {
		add(p.Spec.Containers[i].Resources.Requests)
		add(p.Spec.Containers[i].Resources.Limits)
	}
	for i := range p.Spec.InitContainers {
		add(p.Spec.InitContainers[i].Resources.Requests)
		add(p.Spec.InitContainers[i].Resources.Limits)
	}
	add(p.Spec.Overhead)
}

func (v vec) equal(w vec) bool {
	if len(v) != len(w) {
		return false
	}
	for i := range v {
		if v[i] != w[i] {
			return false
		}
	}
	return true
}
