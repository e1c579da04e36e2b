package interruption

import (
	"context"
	"encoding/json"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodesmith/nodesmith/pkg/controllers/events"
)

// ConditionQueueReady is the condition the controller keeps on its own Pod
// (kubectl describe pod shows it): True while the interruption queue
// answers, False with QueueNotFound, AccessDenied or QueueUnavailable and a
// message saying what to fix.
const ConditionQueueReady corev1.PodConditionType = "nodesmith.sh/InterruptionQueueReady"

// health reports the queue's state when it changes: the queue_ready gauge,
// a log line, and an Event and condition on the controller's Pod.
type health struct {
	deps Deps
	self *types.NamespacedName

	mu    sync.Mutex
	known bool
	ready bool
	msg   string
}

func newHealth(deps Deps, self *types.NamespacedName) *health {
	return &health{deps: deps, self: self}
}

// set records the outcome of a queue call: nil is success.
func (h *health) set(ctx context.Context, qe *queueError) {
	ready, reason, msg := qe == nil, "QueueReady", "the interruption queue answers"
	if qe != nil {
		reason, msg = qe.reason, qe.msg
	}
	h.mu.Lock()
	same := h.known && h.ready == ready && h.msg == msg
	h.known, h.ready, h.msg = true, ready, msg
	h.mu.Unlock()
	if same {
		return
	}
	logger := log.FromContext(ctx).WithName("interruption")
	if ready {
		h.deps.Metrics.Interruption.QueueReady.Set(1)
		logger.Info(msg)
	} else {
		h.deps.Metrics.Interruption.QueueReady.Set(0)
		logger.Error(qe.err, msg)
	}
	if h.self == nil {
		return
	}
	pod := &corev1.Pod{}
	if err := h.deps.Kube.Get(ctx, *h.self, pod); err != nil {
		logger.V(1).Info("cannot report the interruption queue on the controller's pod", "pod", h.self.String(), "error", err.Error())
		return
	}
	h.deps.Recorder.Publish(events.InterruptionQueue(pod, ready, msg))
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
		Type: ConditionQueueReady, Status: status, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(h.deps.Clock.Now()),
	}}}})
	if err != nil {
		return
	}
	// A strategic merge patch merges conditions by type, leaving the kubelet's alone.
	if err := h.deps.Kube.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		logger.V(1).Info("cannot set the interruption queue condition on the controller's pod", "pod", h.self.String(), "error", err.Error())
	}
}
