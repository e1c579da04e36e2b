package simulator

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podState is where a pod's process is, as the simulated kubelet sees it.
type podState int

const (
	podPending     podState = iota // not bound to a node
	podStarting                    // bound, containers starting
	podRunning                     // running its work
	podTerminating                 // deletion requested: finishing its work before it exits
	podLost                        // its node's instance went away: nothing runs, the object remains
	podGone                        // deleted from the API
)

// owner is the controller that made a pod: it hears when the pod runs,
// when it is asked to stop and when it is gone, to do its work or replace it.
type owner interface {
	// podRunning: the pod started its work.
	podRunning(p *pod)
	// podStopping: SIGTERM; the owner calls kubelets.exited when the process ends.
	podStopping(p *pod)
	// podLost: the process died with its node; the object remains.
	podLost(p *pod)
	// podGone: the object was deleted.
	podGone(p *pod)
}

// pod is the simulator's record of one workload pod: the API object's key
// and what the process inside it is doing.
type pod struct {
	key    types.NamespacedName
	uid    types.UID
	seq    int
	owner  owner
	daemon bool
	state  podState
	node   string
	// deleting: the API object has a deletion timestamp.
	deleting bool
	// succeeded: a Job's pod that finished its work.
	succeeded bool
	createdAt time.Duration
	// killAt is when the kubelet kills the pod whatever it is doing (its
	// deletion timestamp plus grace period).
	killAt time.Duration
	// busy counts the messages a queue worker is processing; a terminating
	// worker exits when it reaches zero.
	busy int
	// held are the receive times of the messages it holds, to know when they
	// come back if the pod dies holding them.
	held []time.Duration
}

// setState moves a workload pod to st, keeping the per-state counts the
// timeline reads.
func (s *Sim) setState(p *pod, st podState) {
	if !p.daemon {
		s.podCount[p.state]--
		s.podCount[st]++
	}
	p.state = st
}

// createPod creates a pod from a template through the API server, as a
// workload controller would, and tracks its process.
func (s *Sim) createPod(name string, tmpl *corev1.PodTemplateSpec, o owner, ownerKind, ownerName string, node string) *pod {
	obj := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	obj.Name = name
	if obj.Namespace == "" {
		obj.Namespace = "default"
	}
	isController := true
	obj.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: ownerKind, Name: ownerName,
		UID: types.UID(ownerKind + "/" + ownerName), Controller: &isController}}
	obj.Spec.NodeName = node
	obj.Status.Phase = corev1.PodPending
	if err := s.kube.Create(s.ctx, obj); err != nil {
		s.fail(err)
		return nil
	}
	p := s.pods[obj.UID]
	if p == nil {
		s.fail(fmt.Errorf("pod %s was created but not tracked", name))
		return nil
	}
	p.owner = o
	if ownerKind == "DaemonSet" {
		p.daemon = true
		s.podCount[p.state]-- // daemon pods are not in the workload counts
	} else {
		s.podsCreated++
	}
	return p
}

// track starts the record of a pod the API server just stored.
func (s *Sim) track(obj *corev1.Pod) *pod {
	s.seqPods++
	p := &pod{key: client.ObjectKeyFromObject(obj), uid: obj.UID, seq: s.seqPods, createdAt: s.now, state: podPending}
	s.podCount[podPending]++
	s.pods[obj.UID] = p
	return p
}

// getPod reads a pod's API object (nil when gone).
func (s *Sim) getPod(p *pod) *corev1.Pod {
	obj := &corev1.Pod{}
	if err := s.kube.Get(s.ctx, p.key, obj); err != nil {
		return nil
	}
	return obj
}
