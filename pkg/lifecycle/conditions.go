package lifecycle

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Condition builds a condition of type t: True with reason t when ok, else
// False with the given reason and message. ObservedGeneration and the
// transition time are filled by SetCondition.
func Condition(t string, ok bool, reason, message string) metav1.Condition {
	if ok {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, Message: message}
	}
	if reason == "" {
		reason = "Not" + t
	}
	return metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: reason, Message: message}
}

// SetCondition writes c into conds, keeping the last transition time when the
// status did not change (so "since when" stays true), and reports whether
// anything changed.
func SetCondition(conds *[]metav1.Condition, c metav1.Condition, generation int64, now metav1.Time) bool {
	c.ObservedGeneration = generation
	c.LastTransitionTime = now
	return meta.SetStatusCondition(conds, c)
}

// ClaimReady is a NodeClaim's Ready condition: True once it launched,
// registered and initialized; otherwise False with the first phase still
// pending as the reason, so `kubectl get nodeclaims` says what it waits for.
func ClaimReady(conds []metav1.Condition) metav1.Condition {
	for _, t := range []string{nsv1.ConditionLaunched, nsv1.ConditionRegistered, nsv1.ConditionInitialized} {
		c := meta.FindStatusCondition(conds, t)
		if c == nil || c.Status != metav1.ConditionTrue {
			msg := "waiting for " + t
			if c != nil && c.Message != "" {
				msg = c.Message
			}
			return Condition(nsv1.ConditionReady, false, "Not"+t, msg)
		}
	}
	return Condition(nsv1.ConditionReady, true, "", "")
}

// PoolReady is a NodePool's Ready condition from its node class and its
// validation. The node class comes first: a pool is validated against what
// its class offers, so while the class is not ready its reason is the one
// to fix.
func PoolReady(conds []metav1.Condition) metav1.Condition {
	for _, t := range []string{nsv1.ConditionNodeClassReady, nsv1.ConditionValidationSucceeded} {
		c := meta.FindStatusCondition(conds, t)
		if c == nil || c.Status != metav1.ConditionTrue {
			msg := "waiting for " + t
			if c != nil && c.Message != "" {
				msg = c.Message
			}
			reason := "Not" + t
			if c != nil && c.Reason != "" && c.Status == metav1.ConditionFalse {
				reason = c.Reason
			}
			return Condition(nsv1.ConditionReady, false, reason, msg)
		}
	}
	return Condition(nsv1.ConditionReady, true, "", "")
}

// AllReady is the Ready condition over a set of sub-conditions (an
// EC2NodeClass's subnets, security groups, AMIs, instance profile): True when
// all are True, else False carrying the first failing one's reason and message.
func AllReady(conds []metav1.Condition, types ...string) metav1.Condition {
	for _, t := range types {
		c := meta.FindStatusCondition(conds, t)
		if c == nil || c.Status != metav1.ConditionTrue {
			if c == nil {
				return Condition(nsv1.ConditionReady, false, "Not"+t, "waiting for "+t)
			}
			return Condition(nsv1.ConditionReady, false, c.Reason, c.Message)
		}
	}
	return Condition(nsv1.ConditionReady, true, "", "")
}

// MergeConditions carries one writer's condition changes onto the
// conditions another copy of the object holds now. base is what the writer
// read, want what it means to write, cur the object's conditions at the
// moment of writing. Per condition type: one the writer added or changed is
// written over cur's; one it removed is removed; every other type keeps
// cur's value, whoever wrote it. When the written condition has the status
// cur already holds, cur's transition time stays (the status did not
// transition). cur's order is kept; new types follow in want's order. The
// result is a new slice; cur is not modified.
func MergeConditions(base, want, cur []metav1.Condition) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(cur)+len(want))
	out = append(out, cur...)
	for _, w := range want {
		if b := meta.FindStatusCondition(base, w.Type); b != nil && sameCondition(*b, w) {
			continue // not this writer's change
		}
		i := indexOf(out, w.Type)
		if i < 0 {
			out = append(out, w)
			continue
		}
		if out[i].Status == w.Status {
			w.LastTransitionTime = out[i].LastTransitionTime
		}
		out[i] = w
	}
	for _, b := range base {
		if meta.FindStatusCondition(want, b.Type) == nil {
			if i := indexOf(out, b.Type); i >= 0 {
				out = append(out[:i], out[i+1:]...)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func indexOf(conds []metav1.Condition, t string) int {
	for i := range conds {
		if conds[i].Type == t {
			return i
		}
	}
	return -1
}

// sameCondition: every field equal, the transition time as an instant.
func sameCondition(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.ObservedGeneration == b.ObservedGeneration && a.LastTransitionTime.Equal(&b.LastTransitionTime)
}

// CloudAccountReady is a NodePool's CloudAccountReady condition from its
// claims: False, with the claim's reason and message (which names the fix),
// while one of them failed to launch for a setup step the cloud account
// lacks; True otherwise. Claims are looked at in name order, so the
// condition does not flap between two claims saying the same thing.
func CloudAccountReady(claims []*nsv1.NodeClaim) metav1.Condition {
	var failing *metav1.Condition
	name := ""
	for _, c := range claims {
		l := meta.FindStatusCondition(c.Status.Conditions, nsv1.ConditionLaunched)
		if l == nil || l.Status != metav1.ConditionFalse || !nsv1.IsAccountSetupReason(l.Reason) || c.DeletionTimestamp != nil {
			continue
		}
		if failing == nil || c.Name < name {
			failing, name = l, c.Name
		}
	}
	if failing == nil {
		return Condition(nsv1.ConditionCloudAccountReady, true, "", "")
	}
	return Condition(nsv1.ConditionCloudAccountReady, false, failing.Reason, fmt.Sprintf("nodeclaim %s: %s", name, failing.Message))
}
