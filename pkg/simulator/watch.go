package simulator

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/simulator/apiserver"
)

// onChange is the world's watch on the API server: the parts of the
// cluster the simulator plays (kube-scheduler, kubelets, workload
// controllers, kube-controller-manager's disruption controller) learn of
// every write here. It runs inside the write's delivery, so it only
// updates bookkeeping and schedules work; the work runs as its own event.
func (s *Sim) onChange(ch apiserver.Change) {
	switch obj := ch.Object().(type) {
	case *corev1.Pod:
		s.podChanged(ch)
		s.budgets.changed(ch)
	case *policyv1.PodDisruptionBudget:
		s.budgets.changed(ch)
	case *corev1.Node:
		s.nodeChanged(ch, obj)
	case *nsv1.NodeClaim:
		s.bill.claimChanged(ch)
	case *corev1.PersistentVolumeClaim, *corev1.PersistentVolume, *storagev1.StorageClass:
		s.sched.storageChanged(ch)
	}
}

func (s *Sim) podChanged(ch apiserver.Change) {
	var old, cur *corev1.Pod
	if ch.Old != nil {
		old = ch.Old.(*corev1.Pod)
	}
	if ch.New != nil {
		cur = ch.New.(*corev1.Pod)
	}
	switch {
	case old == nil: // created
		p := s.track(cur)
		if cur.Spec.NodeName != "" {
			s.bound(p, cur)
		} else {
			s.sched.add(cur)
		}
	case cur == nil: // gone
		p := s.pods[old.UID]
		s.sched.remove(old)
		if p == nil || p.state == podGone {
			return
		}
		s.setState(p, podGone)
		delete(s.pods, old.UID)
		s.kubelets.forget(p)
		if p.owner != nil {
			o := p.owner
			s.schedule(s.now, prioNormal, func() { o.podGone(p) })
		}
	default:
		p := s.pods[cur.UID]
		if p == nil {
			return
		}
		if old.Spec.NodeName == "" && cur.Spec.NodeName != "" {
			s.bound(p, cur)
		} else if cur.Spec.NodeName != "" {
			s.sched.boundChanged(cur)
		}
		if cur.DeletionTimestamp != nil && (old.DeletionTimestamp == nil || !old.DeletionTimestamp.Equal(cur.DeletionTimestamp)) {
			p.deleting = true
			s.kubelets.deleting(p, cur) // a new deletion, or a shorter grace period
			if rs, ok := p.owner.(*replicaSet); ok && s.kubelets.dead[p.node] {
				// The ReplicaSet controller counts no terminating pod and
				// replaces it at once; the simulator's replaces a pod when
				// its deletion completes, which a stopped kubelet never
				// confirms (the pod GC removes it once the node is gone).
				rs.reconcileSoon()
			}
		}
	}
}

// bound records a pod the scheduler (or a DaemonSet) placed on a node and
// hands it to that node's kubelet.
func (s *Sim) bound(p *pod, obj *corev1.Pod) {
	p.node = obj.Spec.NodeName
	s.sched.boundChanged(obj)
	s.setState(p, podStarting)
	s.kubelets.start(p)
}

func (s *Sim) nodeChanged(ch apiserver.Change, obj *corev1.Node) {
	if ch.New == nil {
		s.sched.nodeGone(obj.Name)
		s.kubelets.nodeGone(obj.Name)
		return
	}
	s.sched.nodeChanged(obj)
	for _, ds := range s.dsets {
		ds.nodeChanged(obj)
	}
}
