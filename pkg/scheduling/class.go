package scheduling

import (
	"bytes"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// podClass is a set of pending pods the solver treats as interchangeable:
// same namespace, labels, requests, node selector, affinity, tolerations,
// topology spread and host ports. Every decision is made per class, so the
// cost of a solve grows with the number of distinct shapes, not pods.
type podClass struct {
	id   int
	pods []*corev1.Pod // sorted by namespace/name
	rep  *corev1.Pod
	req  vec
	// hostPorts the pod binds (protocol/ip/port).
	ports []hostPort
	// variants are the relaxation levels, strictest first.
	variants []*variant
	// matches lists the topology groups whose selector counts this class.
	matches []int
	// zoneRelevant reports whether any zone-keyed group counts or constrains the class.
	zoneRelevant bool
	// balanced lists the balanced zone groups that count the class.
	balanced []*group
	// affine: the class has a required pod affinity term.
	affine bool
	// keyRel is the set of topology.keys the class is concerned with: a
	// group on the key counts it, or it has a rule on the key.
	keyRel uint64
	// affinity is rep's required node affinity, built on first use: the
	// solver matches it against every node, thousands of times a cycle.
	affinity *nodeaffinity.RequiredNodeAffinity
}

func (c *podClass) nodeAffinity() *nodeaffinity.RequiredNodeAffinity {
	if c.affinity == nil {
		a := nodeaffinity.GetRequiredNodeAffinity(c.rep)
		c.affinity = &a
	}
	return c.affinity
}

type hostPort struct {
	protocol corev1.Protocol
	ip       string
	port     int32
}

func (a hostPort) conflicts(b hostPort) bool {
	if a.port != b.port || a.protocol != b.protocol {
		return false
	}
	return a.ip == b.ip || a.ip == "" || b.ip == "" || a.ip == "0.0.0.0" || b.ip == "0.0.0.0"
}

func podHostPorts(p *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(cs []corev1.Container) {
		for i := range cs {
			for _, cp := range cs[i].Ports {
				if cp.HostPort <= 0 {
					continue
				}
				proto := cp.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				out = append(out, hostPort{protocol: proto, ip: cp.HostIP, port: cp.HostPort})
			}
		}
	}
	add(p.Spec.InitContainers)
	add(p.Spec.Containers)
	return out
}

func portsConflict(a, b []hostPort) bool {
	for _, x := range a {
		for _, y := range b {
			if x.conflicts(y) {
				return true
			}
		}
	}
	return false
}

// classifier groups pods by a signature written into a reused buffer, so a
// lookup for an already-seen shape does not allocate.
type classifier struct {
	d       *dims
	buf     bytes.Buffer
	byKey   map[string]*podClass
	classes []*podClass
	scratch vec
}

func newClassifier(d *dims) *classifier {
	return &classifier{d: d, byKey: map[string]*podClass{}}
}

func (c *classifier) add(p *corev1.Pod) {
	req := c.d.podRequests(p)
	c.buf.Reset()
	w := &c.buf
	w.WriteString(p.Namespace)
	w.WriteByte(0)
	for _, x := range req {
		w.WriteString(strconv.FormatInt(x, 36))
		w.WriteByte(',')
	}
	writeMap(w, p.Labels)
	writeMap(w, p.Spec.NodeSelector)
	writeAffinity(w, p.Spec.Affinity)
	for _, t := range p.Spec.Tolerations {
		w.WriteString(t.Key)
		w.WriteByte('|')
		w.WriteString(string(t.Operator))
		w.WriteByte('|')
		w.WriteString(t.Value)
		w.WriteByte('|')
		w.WriteString(string(t.Effect))
		w.WriteByte(';')
	}
	w.WriteByte(0)
	for _, s := range p.Spec.TopologySpreadConstraints {
		w.WriteString(strconv.Itoa(int(s.MaxSkew)))
		w.WriteString(s.TopologyKey)
		w.WriteString(string(s.WhenUnsatisfiable))
		writeSelector(w, s.LabelSelector)
		if s.MinDomains != nil {
			w.WriteString(strconv.Itoa(int(*s.MinDomains)))
		}
		if s.NodeAffinityPolicy != nil {
			w.WriteString(string(*s.NodeAffinityPolicy))
		}
		if s.NodeTaintsPolicy != nil {
			w.WriteString(string(*s.NodeTaintsPolicy))
		}
		for _, k := range s.MatchLabelKeys {
			w.WriteString(k)
			w.WriteByte(',')
		}
		w.WriteByte(';')
	}
	w.WriteByte(0)
	for _, hp := range podHostPorts(p) {
		w.WriteString(string(hp.protocol))
		w.WriteString(hp.ip)
		w.WriteString(strconv.Itoa(int(hp.port)))
		w.WriteByte(';')
	}
	if cls, ok := c.byKey[string(w.Bytes())]; ok {
		cls.pods = append(cls.pods, p)
		return
	}
	cls := &podClass{id: len(c.classes), pods: []*corev1.Pod{p}, rep: p, req: req, ports: podHostPorts(p)}
	c.byKey[w.String()] = cls
	c.classes = append(c.classes, cls)
}

func writeMap(w *bytes.Buffer, m map[string]string) {
	if len(m) == 0 {
		w.WriteByte(0)
		return
	}
	var keysArr [16]string
	keys := keysArr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.WriteString(k)
		w.WriteByte('=')
		w.WriteString(m[k])
		w.WriteByte(',')
	}
	w.WriteByte(0)
}

func writeSelector(w *bytes.Buffer, s *metav1.LabelSelector) {
	if s == nil {
		w.WriteString("<nil>")
		return
	}
	writeMap(w, s.MatchLabels)
	for _, e := range s.MatchExpressions {
		w.WriteString(e.Key)
		w.WriteString(string(e.Operator))
		for _, v := range e.Values {
			w.WriteString(v)
			w.WriteByte(',')
		}
		w.WriteByte(';')
	}
	w.WriteByte(0)
}

func writeNodeTerm(w *bytes.Buffer, t *corev1.NodeSelectorTerm) {
	for _, set := range [][]corev1.NodeSelectorRequirement{t.MatchExpressions, t.MatchFields} {
		for _, e := range set {
			w.WriteString(e.Key)
			w.WriteString(string(e.Operator))
			for _, v := range e.Values {
				w.WriteString(v)
				w.WriteByte(',')
			}
			w.WriteByte(';')
		}
		w.WriteByte('|')
	}
}

func writePodTerm(w *bytes.Buffer, t *corev1.PodAffinityTerm) {
	writeSelector(w, t.LabelSelector)
	writeSelector(w, t.NamespaceSelector)
	for _, n := range t.Namespaces {
		w.WriteString(n)
		w.WriteByte(',')
	}
	w.WriteString(t.TopologyKey)
	for _, k := range t.MatchLabelKeys {
		w.WriteString(k)
		w.WriteByte(',')
	}
	for _, k := range t.MismatchLabelKeys {
		w.WriteString(k)
		w.WriteByte(',')
	}
	w.WriteByte(';')
}

func writeAffinity(w *bytes.Buffer, a *corev1.Affinity) {
	if a == nil {
		w.WriteByte(0)
		return
	}
	if na := a.NodeAffinity; na != nil {
		w.WriteString("na")
		if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			for i := range r.NodeSelectorTerms {
				writeNodeTerm(w, &r.NodeSelectorTerms[i])
				w.WriteByte('/')
			}
		}
		w.WriteByte('#')
		for i := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			p := &na.PreferredDuringSchedulingIgnoredDuringExecution[i]
			w.WriteString(strconv.Itoa(int(p.Weight)))
			writeNodeTerm(w, &p.Preference)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		writeAffinityTerms(w, "pa", pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		writeAffinityTerms(w, "aa", pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	w.WriteByte(0)
}

// writeAffinityTerms writes the terms of a pod affinity or anti-affinity
// (the two API types share their term types) under tag.
func writeAffinityTerms(w *bytes.Buffer, tag string, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) {
	w.WriteString(tag)
	for j := range required {
		writePodTerm(w, &required[j])
	}
	w.WriteByte('#')
	for j := range preferred {
		w.WriteString(strconv.Itoa(int(preferred[j].Weight)))
		writePodTerm(w, &preferred[j].PodAffinityTerm)
	}
}
