package lifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func pod(opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", CreationTimestamp: metav1.NewTime(t0)}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func unschedulable(p *corev1.Pod) {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable})
}

func named(n string) podOpt { return func(p *corev1.Pod) { p.Name = n } }

func ownedBy(kind string, controller bool) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: kind, Name: "o", Controller: &controller})
	}
}

func critical(p *corev1.Pod) { p.Spec.PriorityClassName = SystemNodeCritical }

func annotated(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func startedAt(t time.Time) podOpt {
	return func(p *corev1.Pod) { mt := metav1.NewTime(t); p.Status.StartTime = &mt }
}
