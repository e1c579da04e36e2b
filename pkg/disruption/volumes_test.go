package disruption

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// withVolume gives the pod a claim bound to a PersistentVolume pinned to
// zone (by the EBS CSI driver's key, as it writes it).
func (w *world) withVolume(zone string) podOpt {
	return func(p *corev1.Pod) {
		claim := p.Name + "-data"
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
		w.claims = append(w.claims, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: claim},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-" + claim}})
		w.volumes = append(w.volumes, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + claim},
			Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "topology.ebs.csi.aws.com/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}})
		w.snap.Storage = provisioning.NewStorage(w.claims, w.volumes, nil)
	}
}

// The disruption simulation places a moved pod by the provisioner's volume
// rule: a pod whose volume lives in zone-a does not move to a node in
// zone-b, and a node whose pod's claim is gone is not disrupted at all.
func TestDisruptionKeepsPodsWithTheirVolumes(t *testing.T) {
	const od = nsv1.CapacityTypeOnDemand
	tests := []struct {
		name      string
		build     func() Input
		want      string
		wantSkips map[string]SkipReason
		check     func(t *testing.T, p *Plan)
	}{{
		name: "no volumes: the zone-a node's pod moves to zone-b",
		build: func() Input {
			w := newWorld(pool("p"))
			a := w.node("p", "medium", "zone-a", od)
			w.pod(a, "1")
			b := w.node("p", "medium", "zone-b", od)
			w.pod(b, "1100m")
			return w.input()
		},
		want: "SingleNodeConsolidation[p-01]",
	}, {
		name: "the zone-a pod's volume keeps it in zone-a: the zone-b node moves instead",
		build: func() Input {
			w := newWorld(pool("p"))
			a := w.node("p", "medium", "zone-a", od)
			w.pod(a, "1", w.withVolume("zone-a"))
			b := w.node("p", "medium", "zone-b", od)
			w.pod(b, "1100m")
			return w.input()
		},
		// Medium nodes for 1 and 1.1 cpu: each is replaced by a small one
		// (cheaper than moving); p-01's only in zone-a.
		want:  "SingleNodeConsolidation[p-01]+1,SingleNodeConsolidation[p-03]+1",
		check: replacedIn("p-01", "zone-a"),
	}, {
		name: "both pods pinned to their zones: replacements stay in the pinned zone",
		build: func() Input {
			w := newWorld(pool("p"))
			a := w.node("p", "large", "zone-a", od)
			w.pod(a, "1", w.withVolume("zone-a"))
			b := w.node("p", "large", "zone-b", od)
			w.pod(b, "1100m", w.withVolume("zone-b"))
			return w.input()
		},
		want: "MultiNodeConsolidation[p-01 p-03]+2",
		check: func(t *testing.T, p *Plan) {
			replacedIn("p-01", "zone-a")(t, p)
			replacedIn("p-03", "zone-b")(t, p)
		},
	}, {
		name: "a pod whose claim is gone could go nowhere: its node stays",
		build: func() Input {
			w := newWorld(pool("p"))
			a := w.node("p", "medium", "zone-a", od)
			w.pod(a, "1", func(p *corev1.Pod) {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "gone"}}})
			})
			b := w.node("p", "medium", "zone-a", od)
			w.pod(b, "1100m")
			return w.input()
		},
		want:      "SingleNodeConsolidation[p-03]",
		wantSkips: map[string]SkipReason{"p-01": SkipNowhereToGo},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := Compute(tt.build())
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(summaries(plan), ","); got != tt.want {
				t.Fatalf("actions %s, want %s\nskips: %+v", got, tt.want, plan.Skipped)
			}
			for node, reason := range tt.wantSkips {
				found := false
				for _, s := range plan.Skipped {
					if s.Node == node {
						found = true
						if s.Reason != reason || !strings.Contains(s.Message, "default/gone does not exist") {
							t.Errorf("skip of %s = %s (%s), want %s naming the missing claim", node, s.Reason, s.Message, reason)
						}
					}
				}
				if !found {
					t.Errorf("%s not skipped, want %s", node, reason)
				}
			}
			if tt.check != nil {
				tt.check(t, plan)
			}
		})
	}
}

// replacedIn checks that node's action replaces it, and that every
// replacement of the plan carrying a pod of node launches in zone only.
func replacedIn(node, zone string) func(t *testing.T, p *Plan) {
	return func(t *testing.T, p *Plan) {
		t.Helper()
		for _, a := range p.Actions {
			var pods map[string]bool
			for _, c := range a.Candidates {
				if c.Node.Name == node {
					pods = map[string]bool{}
					for _, pod := range c.Pods {
						pods[pod.Name] = true
					}
				}
			}
			if pods == nil {
				continue
			}
			carried := 0
			for _, r := range a.Replacements {
				mine := false
				for _, pod := range r.Pods {
					mine = mine || pods[pod.Name]
				}
				if !mine {
					continue
				}
				carried++
				for _, o := range r.Options {
					if o.Zone != zone {
						t.Errorf("the replacement for %s's pods may launch %s in %s, want %s only", node, o.InstanceType.Name, o.Zone, zone)
					}
				}
			}
			if carried == 0 {
				t.Errorf("%s's pods move to another node, want a replacement in %s", node, zone)
			}
			return
		}
		t.Fatalf("no action on %s", node)
	}
}
