package simulator

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/simulator/apiserver"
	"github.com/nodesmith/nodesmith/pkg/simulator/scheduler"
)

// schedulerLoop plays kube-scheduler: a scheduling queue and the default
// profile's filters and scores (pkg/simulator/scheduler), fed by the API
// server's change feed. It never reads Nodesmith's nominations, as the
// real scheduler does not. A pod that fits nowhere is marked Unschedulable,
// which is what makes it provisionable.
type schedulerLoop struct {
	s      *Sim
	cache  *scheduler.Scheduler
	queue  *scheduler.Queue
	queued bool
	// wakeAt is the pass already scheduled for the queue's next ready time.
	wakeAt time.Duration
}

func newSchedulerLoop(s *Sim) *schedulerLoop {
	return &schedulerLoop{s: s, cache: scheduler.New(), queue: scheduler.NewQueue(s.clock), wakeAt: -1}
}

// add queues a new pending pod.
func (l *schedulerLoop) add(p *corev1.Pod) {
	l.queue.Add(p)
	l.kick()
}

// remove forgets a deleted pod; its resources are free for others.
func (l *schedulerLoop) remove(p *corev1.Pod) {
	l.queue.Delete(p)
	if p.Spec.NodeName != "" {
		l.cache.DeletePod(p)
		l.queue.MoveAll()
		l.kick()
	}
}

// boundChanged updates a bound pod in the cache.
func (l *schedulerLoop) boundChanged(p *corev1.Pod) {
	l.queue.Delete(p)
	l.cache.UpsertPod(p)
}

// storageChanged updates a claim, volume or class in the cache; pods
// waiting for one are tried again.
func (l *schedulerLoop) storageChanged(ch apiserver.Change) {
	switch obj := ch.Object().(type) {
	case *corev1.PersistentVolumeClaim:
		if ch.New == nil {
			l.cache.DeleteClaim(obj)
		} else {
			l.cache.UpsertClaim(obj)
		}
	case *corev1.PersistentVolume:
		if ch.New == nil {
			l.cache.DeleteVolume(obj)
		} else {
			l.cache.UpsertVolume(obj)
		}
	case *storagev1.StorageClass:
		if ch.New == nil {
			l.cache.DeleteStorageClass(obj)
		} else {
			l.cache.UpsertStorageClass(obj)
		}
	}
	l.queue.MoveAll()
	l.kick()
}

func (l *schedulerLoop) nodeChanged(n *corev1.Node) {
	l.cache.UpsertNode(n)
	l.queue.MoveAll()
	l.kick()
}

func (l *schedulerLoop) nodeGone(name string) {
	l.cache.DeleteNode(name)
}

// kick runs a scheduling pass at the end of the current instant, once
// however many changes asked for it.
func (l *schedulerLoop) kick() {
	if l.queued {
		return
	}
	l.queued = true
	l.s.schedule(l.s.now, prioLate, l.pass)
}

// pass tries every pod the queue holds ready, in its order.
func (l *schedulerLoop) pass() {
	l.queued = false
	s := l.s
	for s.err == nil {
		p, ok := l.queue.Pop()
		if !ok {
			break
		}
		// The store's own maps (read only; unschedulable copies before it
		// writes), as kube-scheduler reads its informer's pods.
		cur := &corev1.Pod{}
		if err := s.kube.Get(s.ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, cur, client.UnsafeDisableDeepCopy); err != nil || cur.Spec.NodeName != "" || cur.DeletionTimestamp != nil {
			continue
		}
		node, err := l.cache.Schedule(cur)
		if err != nil {
			if fe, ok := err.(*scheduler.FitError); ok && fe.NumNodes == 0 {
				l.queue.Errored(cur) // kube-scheduler's error path: no node at all
			} else {
				l.queue.Failed(cur)
			}
			l.unschedulable(cur, err)
			continue
		}
		if err := s.kube.SubResource("binding").Create(s.ctx, cur, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: cur.Namespace, Name: cur.Name},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}); err != nil {
			s.fail(fmt.Errorf("binding pod %s/%s to %s: %w", cur.Namespace, cur.Name, node, err))
			return
		}
	}
	if at, ok := l.queue.NextTime(); ok {
		d := at.Sub(Epoch)
		if d <= s.now {
			l.kick()
		} else if l.wakeAt <= s.now || d < l.wakeAt {
			l.wakeAt = d
			s.schedule(d, prioLate, l.pass)
		}
	}
}

// unschedulable writes the PodScheduled condition kube-scheduler writes
// when a pod fits no node, when it changed.
func (l *schedulerLoop) unschedulable(p *corev1.Pod, why error) {
	s := l.s
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && c.Message == why.Error() {
			return
		}
	}
	p = p.DeepCopy()
	setPodCondition(p, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: why.Error(), LastTransitionTime: metav1.NewTime(s.clock.Now())})
	if err := s.kube.Status().Update(s.ctx, p); err != nil {
		s.fail(fmt.Errorf("marking pod %s/%s unschedulable: %w", p.Namespace, p.Name, err))
	}
}
