package simulator

import (
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

// defaultNoExecuteToleration is how long a pod that names no toleration of
// the not-ready and unreachable NoExecute taints stays on such a node: the
// DefaultTolerationSeconds admission plugin gives every pod 300 s.
const defaultNoExecuteToleration = 300 * time.Second

// nodeCondition plays a scenario's nodeCondition event (see
// scenario.NodeCondition): the kubelet stopping, with the node lifecycle
// controller's condition, taints and NoExecute evictions, or a node
// monitoring agent's failing condition.
func (s *Sim) nodeCondition(e scenario.NodeCondition) {
	typ := corev1.NodeConditionType(e.Type)
	if typ == "" {
		typ = corev1.NodeReady
	}
	status := corev1.ConditionStatus(e.Status)
	if status == "" {
		status = corev1.ConditionFalse
		if typ == corev1.NodeReady {
			status = corev1.ConditionUnknown
		}
	}
	var claims nsv1.NodeClaimList
	if err := s.kube.List(s.ctx, &claims, client.MatchingLabels{nsv1.LabelNodePool: e.Pool}); err != nil {
		s.fail(err)
		return
	}
	var targets []*nsv1.NodeClaim
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.Status.NodeName == "" || c.DeletionTimestamp != nil {
			continue
		}
		if n := s.nodeOf(c.Status.NodeName); n == nil || hasCondition(n, typ, status) {
			continue
		}
		targets = append(targets, c)
	}
	slices.SortStableFunc(targets, func(a, b *nsv1.NodeClaim) int {
		return a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time)
	})
	n := min(max(e.Count, 1), len(targets))
	for _, c := range targets[:n] {
		name := c.Status.NodeName
		if typ == corev1.NodeReady {
			s.kubelets.stop(name)
		}
		if err := s.setNodeCondition(name, typ, status); err != nil {
			s.fail(err)
			return
		}
		if typ == corev1.NodeReady {
			s.evictOnNoExecute(name, notReadyTaintKey(status))
		}
		s.note("node %s (%s): %s=%s, set by the scenario", name, c.Name, typ, status)
	}
	if n == 0 {
		s.note("nodeCondition: pool %s has no running node without %s=%s", e.Pool, typ, status)
	}
}

func hasCondition(n *corev1.Node, typ corev1.NodeConditionType, status corev1.ConditionStatus) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == typ && c.Status == status {
			return true
		}
	}
	return false
}

// notReadyTaintKey is the taint the node lifecycle controller puts on a
// node whose Ready condition is status.
func notReadyTaintKey(status corev1.ConditionStatus) string {
	if status == corev1.ConditionUnknown {
		return corev1.TaintNodeUnreachable
	}
	return corev1.TaintNodeNotReady
}

// setNodeCondition writes the condition (and, for Ready, the node
// lifecycle controller's NoSchedule and NoExecute taints) as of now.
func (s *Sim) setNodeCondition(name string, typ corev1.NodeConditionType, status corev1.ConditionStatus) error {
	node := s.nodeOf(name)
	if node == nil {
		return nil
	}
	now := metav1.NewTime(s.clock.Now())
	if typ == corev1.NodeReady {
		key := notReadyTaintKey(status)
		for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
			node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: key, Effect: effect, TimeAdded: &now})
		}
		if err := s.kube.Update(s.ctx, node); err != nil {
			return fmt.Errorf("tainting node %s %s: %w", name, key, err)
		}
	}
	cond := corev1.NodeCondition{Type: typ, Status: status, Reason: "Scenario", LastHeartbeatTime: now, LastTransitionTime: now,
		Message: "set by the scenario's nodeCondition event"}
	replaced := false
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == typ {
			node.Status.Conditions[i], replaced = cond, true
		}
	}
	if !replaced {
		node.Status.Conditions = append(node.Status.Conditions, cond)
	}
	if err := s.kube.Status().Update(s.ctx, node); err != nil {
		return fmt.Errorf("setting %s=%s on node %s: %w", typ, status, name, err)
	}
	return nil
}

// evictOnNoExecute plays the node lifecycle controller's taint eviction:
// each pod on the node is deleted when its toleration of the NoExecute
// taint key runs out, if the node is still there.
func (s *Sim) evictOnNoExecute(node, key string) {
	for _, p := range s.kubelets.podsSorted(node) {
		obj := s.getPod(p)
		if obj == nil || obj.DeletionTimestamp != nil {
			continue
		}
		wait, ok := noExecuteToleration(obj, key)
		if !ok {
			continue // tolerates it for good
		}
		p := p
		s.after(wait, func() {
			if s.nodeOf(node) == nil || p.state == podGone || p.deleting {
				return
			}
			s.deletePod(p)
		})
	}
}

// noExecuteToleration is how long pod stays on a node tainted key
// NoExecute; ok is false when it stays for good.
func noExecuteToleration(pod *corev1.Pod, key string) (time.Duration, bool) {
	taint := corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute}
	for _, t := range pod.Spec.Tolerations {
		if !t.ToleratesTaint(logr.Discard(), &taint, false) {
			continue
		}
		if t.TolerationSeconds == nil {
			return 0, false
		}
		return time.Duration(max(*t.TolerationSeconds, 0)) * time.Second, true
	}
	return defaultNoExecuteToleration, true
}
