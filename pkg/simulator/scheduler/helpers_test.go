package scheduler

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Builders for the table tests: a Ready node with 4 cpu, 16Gi and 110 pods
// unless told otherwise, and a pod in namespace "default".

type nodeOpt func(*corev1.Node)

func mkNode(name string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("4"),
				corev1.ResourceMemory: resource.MustParse("16Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func alloc(kv ...string) nodeOpt {
	return func(n *corev1.Node) {
		for i := 0; i < len(kv); i += 2 {
			n.Status.Allocatable[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
	}
}

func nodeLabels(kv ...string) nodeOpt {
	return func(n *corev1.Node) {
		for i := 0; i < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func zone(z string) nodeOpt { return nodeLabels(corev1.LabelTopologyZone, z) }

func taint(key, value string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

func ready(status corev1.ConditionStatus) nodeOpt {
	return func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
	}
}

func noConditions(n *corev1.Node) { n.Status.Conditions = nil }

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

type podOpt func(*corev1.Pod)

func mkPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// req sets the first container's requests.
func req(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		rl := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			rl[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		p.Spec.Containers[0].Resources.Requests = rl
	}
}

func container(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		rl := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			rl[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: fmt.Sprintf("c%d", len(p.Spec.Containers)), Resources: corev1.ResourceRequirements{Requests: rl},
		})
	}
}

func initContainer(sidecar bool, kv ...string) podOpt {
	return func(p *corev1.Pod) {
		rl := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			rl[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		c := corev1.Container{Name: fmt.Sprintf("i%d", len(p.Spec.InitContainers)), Resources: corev1.ResourceRequirements{Requests: rl}}
		if sidecar {
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

func labelsOf(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		for i := 0; i < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func inNamespace(ns string) podOpt { return func(p *corev1.Pod) { p.Namespace = ns } }

func on(node string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

func priority(v int32) podOpt { return func(p *corev1.Pod) { p.Spec.Priority = &v } }

func tolerate(key string, op corev1.TolerationOperator, value string, effect corev1.TaintEffect) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	}
}

func nodeSelector(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func hostPort(port int32, proto corev1.Protocol, ip string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{HostPort: port, ContainerPort: port, Protocol: proto, HostIP: ip})
	}
}

func terminating(p *corev1.Pod) {
	now := metav1.Now()
	p.DeletionTimestamp = &now
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func ownedBy(kind, name string) podOpt {
	return func(p *corev1.Pod) {
		api := "apps/v1"
		if kind == "ReplicationController" {
			api = "v1"
		}
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: api, Kind: kind, Name: name, Controller: &yes}}
	}
}

func affinity(f func(*corev1.Affinity)) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		f(p.Spec.Affinity)
	}
}

func sel(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func podAffinity(key string, s *metav1.LabelSelector) podOpt {
	return affinity(func(a *corev1.Affinity) {
		if a.PodAffinity == nil {
			a.PodAffinity = &corev1.PodAffinity{}
		}
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: s})
	})
}

func podAntiAffinity(key string, s *metav1.LabelSelector) podOpt {
	return affinity(func(a *corev1.Affinity) {
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: s})
	})
}

func preferredPodAffinity(weight int32, key string, s *metav1.LabelSelector) podOpt {
	return affinity(func(a *corev1.Affinity) {
		if a.PodAffinity == nil {
			a.PodAffinity = &corev1.PodAffinity{}
		}
		a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: s}})
	})
}

func preferredPodAntiAffinity(weight int32, key string, s *metav1.LabelSelector) podOpt {
	return affinity(func(a *corev1.Affinity) {
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: s}})
	})
}

func spread(key string, maxSkew int32, when corev1.UnsatisfiableConstraintAction, s *metav1.LabelSelector, mod ...func(*corev1.TopologySpreadConstraint)) podOpt {
	return func(p *corev1.Pod) {
		c := corev1.TopologySpreadConstraint{TopologyKey: key, MaxSkew: maxSkew, WhenUnsatisfiable: when, LabelSelector: s}
		for _, m := range mod {
			m(&c)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}

// cluster builds a scheduler holding the nodes and bound pods.
func cluster(nodes []*corev1.Node, pods ...*corev1.Pod) *Scheduler {
	s := New()
	for _, n := range nodes {
		s.UpsertNode(n)
	}
	for _, p := range pods {
		s.UpsertPod(p)
	}
	return s
}

// reasonsOf schedules p and returns the FitError's reasons (nil if it fit)
// and the chosen node.
func reasonsOf(s *Scheduler, p *corev1.Pod) (map[string]int, string) {
	node, err := s.Schedule(p)
	if err == nil {
		return nil, node
	}
	fe, ok := err.(*FitError)
	if !ok {
		panic(err)
	}
	return fe.Reasons, ""
}
