package scheduler

// Temporary stand-in until the real model lands (lead's stub; delete on merge).

import (
	"fmt"
	"sort"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/clock"
)

type Scheduler struct {
	nodes map[string]*corev1.Node
	used  map[string]corev1.ResourceList
	pods  map[types.UID]*corev1.Pod
}

func New() *Scheduler {
	return &Scheduler{nodes: map[string]*corev1.Node{}, used: map[string]corev1.ResourceList{}, pods: map[types.UID]*corev1.Pod{}}
}
func (s *Scheduler) UpsertNode(n *corev1.Node) { s.nodes[n.Name] = n }
func (s *Scheduler) DeleteNode(name string)    { delete(s.nodes, name) }
func (s *Scheduler) UpsertPod(p *corev1.Pod) {
	s.DeletePod(p)
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return
	}
	s.pods[p.UID] = p
	u := s.used[p.Spec.NodeName]
	if u == nil {
		u = corev1.ResourceList{}
		s.used[p.Spec.NodeName] = u
	}
	for k, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
		c := u[k]
		c.Add(q)
		u[k] = c
	}
	c := u[corev1.ResourcePods]
	c.Add(*resourceOne())
	u[corev1.ResourcePods] = c
}
func (s *Scheduler) DeletePod(p *corev1.Pod) {
	old, ok := s.pods[p.UID]
	if !ok {
		return
	}
	delete(s.pods, p.UID)
	u := s.used[old.Spec.NodeName]
	for k, q := range resourcehelper.PodRequests(old, resourcehelper.PodResourcesOptions{}) {
		c := u[k]
		c.Sub(q)
		u[k] = c
	}
	c := u[corev1.ResourcePods]
	c.Sub(*resourceOne())
	u[corev1.ResourcePods] = c
}

type FitError struct {
	Pod      string
	NumNodes int
	Reasons  map[string]int
}

func (e *FitError) Error() string { return fmt.Sprintf("0/%d nodes are available", e.NumNodes) }

func (s *Scheduler) Schedule(p *corev1.Pod) (string, error) {
	names := make([]string, 0, len(s.nodes))
	for n := range s.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	aff := nodeaffinity.GetRequiredNodeAffinity(p)
	for _, name := range names {
		n := s.nodes[name]
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready || n.DeletionTimestamp != nil {
			continue
		}
		if _, bad := schedcorev1.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false); bad {
			continue
		}
		if ok, err := aff.Match(n); !ok || err != nil {
			continue
		}
		fits := true
		u := s.used[name]
		for k, q := range req {
			c := u[k]
			c.Add(q)
			a := n.Status.Allocatable[k]
			if c.Cmp(a) > 0 {
				fits = false
			}
		}
		pc := u[corev1.ResourcePods]
		pc.Add(*resourceOne())
		if a := n.Status.Allocatable[corev1.ResourcePods]; pc.Cmp(a) > 0 {
			fits = false
		}
		if fits {
			return name, nil
		}
	}
	return "", &FitError{Pod: p.Name, NumNodes: len(s.nodes)}
}

type Queue struct {
	active  []*corev1.Pod
	unsched map[types.UID]*corev1.Pod
	order   []types.UID
}

func NewQueue(clock.Clock) *Queue { return &Queue{unsched: map[types.UID]*corev1.Pod{}} }
func (q *Queue) Add(p *corev1.Pod) {
	q.Delete(p)
	q.active = append(q.active, p)
}
func (q *Queue) Delete(p *corev1.Pod) {
	for i, a := range q.active {
		if a.UID == p.UID {
			q.active = append(q.active[:i], q.active[i+1:]...)
			break
		}
	}
	delete(q.unsched, p.UID)
}
func (q *Queue) Pop() (*corev1.Pod, bool) {
	if len(q.active) == 0 {
		return nil, false
	}
	p := q.active[0]
	q.active = q.active[1:]
	return p, true
}
func (q *Queue) Failed(p *corev1.Pod) { q.unsched[p.UID] = p; q.order = append(q.order, p.UID) }
func (q *Queue) MoveAll() {
	for _, uid := range q.order {
		if p, ok := q.unsched[uid]; ok {
			q.active = append(q.active, p)
			delete(q.unsched, uid)
		}
	}
	q.order = nil
}
func (q *Queue) NextTime() (time.Time, bool) { return time.Time{}, false }

func resourceOne() *resource.Quantity { q := resource.MustParse("1"); return &q }
