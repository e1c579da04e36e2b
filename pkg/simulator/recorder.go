package simulator

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
)

// recorder receives the Events the controllers publish: the report's notes
// are made of them, in the controllers' own words, and the reason a claim
// was deleted comes from them.
type recorder struct {
	s *Sim
	// last is the latest Event reason per object name.
	last map[string]string
	// decision is the latest Event per object that names why a controller
	// removes a node (a reason of reasonText).
	decision map[string]string
	// Events seen, for tests and the report: reason → count.
	counts map[string]int
	// podWhy is the latest Warning message about each pod, whole, with the
	// pod's name left out (the report's "still Pending" reasons).
	podWhy map[types.NamespacedName]string
}

var _ events.EventRecorder = (*recorder)(nil)

func newRecorder(s *Sim) *recorder {
	return &recorder{s: s, last: map[string]string{}, decision: map[string]string{}, counts: map[string]int{}, podWhy: map[types.NamespacedName]string{}}
}

// noteworthy Normal reasons: decisions a user reads in the report. Every
// Warning is noteworthy.
var noteworthy = map[string]bool{
	"Empty": true, "Drifted": true, "Expired": true, "Underutilized": true, "DisruptionReplacement": true,
	"ReturnToSpot": true, "ReturnedToSpot": true,
	"SpotInterruption": true, "RebalanceRecommendation": true, "ScheduledChange": true,
	"InstanceStopping": true, "InstanceStopped": true, "InstanceTerminated": true,
	"ReplacementPlanned": true, "InterruptionDrain": true,
}

// Eventf records one Event.
func (r *recorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...interface{}) {
	msg := fmt.Sprintf(note, args...)
	name := ""
	if m, err := meta.Accessor(regarding); err == nil {
		name = m.GetName()
		if _, pod := regarding.(*corev1.Pod); pod && eventtype == corev1.EventTypeWarning {
			r.podWhy[types.NamespacedName{Namespace: m.GetNamespace(), Name: name}] = strings.ReplaceAll(msg, name, "<pod>")
		}
	}
	r.last[name] = reason
	if _, ok := reasonText[reason]; ok {
		r.decision[name] = reason
	}
	r.counts[reason]++
	r.s.intr.event(regarding, reason, msg)
	switch reason {
	case "InsufficientCapacity":
		r.s.failures["insufficient capacity"]++
	case "LaunchFailed":
		if strings.Contains(msg, "node class not ready") {
			r.s.failures["node class not ready"]++
		} else {
			r.s.failures["other"]++
		}
	}
	if eventtype != corev1.EventTypeWarning && !noteworthy[reason] {
		return
	}
	// One note per reason and message shape: the object's name is left
	// out of the key so a thousand pods with one problem make one note.
	key := reason + ":" + strings.ReplaceAll(msg, name, "")
	kind := ""
	if regarding != nil {
		kind = strings.ToLower(regarding.GetObjectKind().GroupVersionKind().Kind)
	}
	if kind == "" {
		kind = kindOf(regarding)
	}
	r.s.noteOnce(key, "%s %s %s: %s", reason, kind, name, truncate(msg, 240))
}

func kindOf(o runtime.Object) string {
	t := fmt.Sprintf("%T", o)
	return strings.ToLower(t[strings.LastIndex(t, ".")+1:])
}

func (r *recorder) lastReason(name string) string { return r.last[name] }
