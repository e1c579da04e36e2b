package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// evictPod is the eviction subresource: the eviction check (PDBs) decides,
// then the pod is deleted with the eviction's options.
func (s *Server) evictPod(ctx context.Context, c *storeClient, obj, sub client.Object) error {
	s.mu.Lock()
	k, err := s.kindOf(&corev1.Pod{})
	if err != nil {
		s.mu.Unlock()
		return err
	}
	cur, ok := k.objs[types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}]
	evict := s.evict
	s.mu.Unlock()
	if !ok {
		return notFound(k, obj.GetName())
	}
	pod := cur.(*corev1.Pod)
	if pod.DeletionTimestamp == nil && evict != nil {
		if err := evict(pod); err != nil {
			return err
		}
	}
	var opts []client.DeleteOption
	if ev, ok := sub.(*policyv1.Eviction); ok && ev.DeleteOptions != nil {
		if ev.DeleteOptions.GracePeriodSeconds != nil {
			opts = append(opts, client.GracePeriodSeconds(*ev.DeleteOptions.GracePeriodSeconds))
		}
	}
	return c.Delete(ctx, pod.DeepCopy(), opts...)
}

// bindPod is the binding subresource: it sets the pod's node and marks it
// scheduled, once.
func (s *Server) bindPod(obj, sub client.Object) error {
	b, ok := sub.(*corev1.Binding)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("binding: want a *corev1.Binding, got %T", sub))
	}
	s.mu.Lock()
	k, err := s.kindOf(&corev1.Pod{})
	if err != nil {
		s.mu.Unlock()
		return err
	}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	cur, ok := k.objs[key]
	if !ok {
		s.mu.Unlock()
		return notFound(k, key.Name)
	}
	pod := cur.(*corev1.Pod)
	if pod.Spec.NodeName != "" {
		s.mu.Unlock()
		return conflict(k, key.Name, fmt.Sprintf("pod %s is already assigned to node %q", key, pod.Spec.NodeName))
	}
	if pod.DeletionTimestamp != nil {
		s.mu.Unlock()
		return conflict(k, key.Name, fmt.Sprintf("pod %s is being deleted", key))
	}
	next := pod.DeepCopy()
	next.Spec.NodeName = b.Target.Name
	setScheduled(next, s.now())
	next.ResourceVersion = s.nextRV()
	s.commit(k, cur, next)
	s.mu.Unlock()
	s.flush()
	return nil
}

// setScheduled records what kube-scheduler writes on a bound pod.
func setScheduled(p *corev1.Pod, now metav1.Time) {
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			p.Status.Conditions[i] = cond
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, cond)
}
