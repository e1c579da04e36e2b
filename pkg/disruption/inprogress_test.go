package disruption

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// TestCommandInProgressKeepsItsRoom: the room a command under way counts
// on for its candidates' pods is not offered to another action. Without
// that, a second consolidation moves its pods into the same room, and when
// both candidates drain some pods find no place: the provisioner launches
// for them while the commands' own replacements sit empty.
//
// The cluster: A (large) runs two pods of 900m; B (medium, 3.9 cpu) runs a
// pod of 2 cpu, so 1.9 cpu are free on it — room for A's two pods, or for
// C's pod; C (small) runs one pod of 900m. B and C together would fit one
// medium node, cheaper than the two.
func TestCommandInProgressKeepsItsRoom(t *testing.T) {
	od := nsv1.CapacityTypeOnDemand
	for _, tt := range []struct {
		name string
		// inCommand puts A in a command under way.
		inCommand, held bool
		// replacement adds the command's replacement, a small node not yet
		// initialized (1.9 cpu: room for both of A's pods).
		replacement bool
		// touched says whether the plan may act on B or C.
		touched bool
	}{
		{name: "no command: B and C are consolidated", touched: true},
		{name: "A's command counts on B's room: B and C are left", inCommand: true},
		{name: "A's command has its own replacement: B's room is free again", inCommand: true, replacement: true, touched: true},
		{name: "a held command's pods stay where they are", inCommand: true, held: true, touched: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(pool("p"))
			var opts []nodeOpt
			if tt.inCommand {
				// As the executor marks a command's candidates: annotated
				// and tainted.
				opts = append(opts, claimAnnotation(nsv1.AnnotationDisruptionCommand, "cmd-1"),
					func(_ *nsv1.NodeClaim, n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, nsv1.DisruptedTaint) })
				if tt.held {
					opts = append(opts, claimAnnotation(nsv1.AnnotationDisruptionHold, "true"))
				}
			}
			if tt.inCommand {
				a := w.node("p", "large", "zone-a", od, opts...)
				w.pod(a, "900m")
				w.pod(a, "900m")
			}
			b := w.node("p", "medium", "zone-a", od)
			w.pod(b, "2")
			c := w.node("p", "small", "zone-a", od)
			w.pod(c, "900m")
			if tt.replacement {
				w.node("p", "small", "zone-a", od, claimAnnotation(nsv1.AnnotationReplacementFor, "cmd-1"),
					func(c *nsv1.NodeClaim, _ *corev1.Node) { c.Status.Conditions = nil })
			}
			plan, err := Compute(w.input())
			if err != nil {
				t.Fatal(err)
			}
			touched := false
			for _, a := range plan.Actions {
				for _, cand := range a.Candidates {
					if cand.Node.Name == b || cand.Node.Name == c {
						touched = true
					}
				}
			}
			if touched != tt.touched {
				t.Errorf("plan acts on B (%s) or C (%s): %v, want %v\nactions %s\nskips: %+v", b, c, touched, tt.touched,
					strings.Join(summaries(plan), ","), plan.Skipped)
			}
		})
	}
}
