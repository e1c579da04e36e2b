package whatif

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// bufferPods are the snapshot's capacity buffers' virtual pods, resolved by
// the controller's rule (provisioning.ResolveBuffer) at the snapshot's
// time. A snapshot holds PodTemplates but not workloads, so a buffer with a
// scalableRef keeps no room here and is noted; an auto buffer counts the
// arrivals of the snapshot's pods (pods already gone are not in it).
func (w *world) bufferPods() ([]*corev1.Pod, []string) {
	now := w.snap.TakenAt.Time
	templates := map[string]*corev1.PodTemplate{}
	for i := range w.snap.PodTemplates {
		pt := &w.snap.PodTemplates[i]
		templates[pt.Namespace+"/"+pt.Name] = pt
	}
	var pods []*corev1.Pod
	var notes []string
	for i := range w.snap.CapacityBuffers {
		b := &w.snap.CapacityBuffers[i]
		var src provisioning.BufferSource
		switch {
		case b.Spec.PodTemplateRef != nil:
			pt := templates[b.Namespace+"/"+b.Spec.PodTemplateRef.Name]
			if pt == nil {
				src.Problem = fmt.Sprintf("PodTemplate %s/%s is not in the snapshot", b.Namespace, b.Spec.PodTemplateRef.Name)
				break
			}
			src.Template = &pt.Template
			sel := labels.SelectorFromSet(pt.Template.Labels)
			for _, p := range w.idx.Pods {
				if p.Namespace == b.Namespace && sel.Matches(labels.Set(p.Labels)) && now.Sub(p.CreationTimestamp.Time) <= time.Hour {
					src.Arrivals = append(src.Arrivals, p.CreationTimestamp.Time)
				}
			}
		default:
			src.Problem = "a snapshot holds no workloads, so a scalableRef buffer keeps no room here"
		}
		res := provisioning.ResolveBuffer(b, src, now)
		if src.Problem != "" {
			notes = append(notes, fmt.Sprintf("CapacityBuffer %s/%s: %s", b.Namespace, b.Name, src.Problem))
		}
		pods = append(pods, res.Pods...)
	}
	return pods, notes
}
