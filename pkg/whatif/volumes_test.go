package whatif

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// plan --repack places a pod where its volume is, as the provisioner
// would, and reports a pod whose claim is gone instead of planning it.
func TestPlanRepackKeepsPodsWithTheirVolumes(t *testing.T) {
	s := baseSnapshot()
	withClaim := func(p *corev1.Pod, claim string) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	}
	// web-0's volume is in us-east-1c (whatever node it runs on now):
	// its new claim must be there. web-1's claim does not exist.
	withClaim(&s.Pods[0], "data-web-0")
	withClaim(&s.Pods[1], "gone")
	s.PersistentVolumeClaims = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data-web-0"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-web-0"}}}
	s.PersistentVolumes = []corev1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "pv-web-0"},
		Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "topology.ebs.csi.aws.com/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1c"}}}}}}}}}}
	r, err := Plan(s, ModeRepack, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pods != 4 || len(r.Unschedulable) != 1 || r.Unschedulable[0].Pod != "default/web-1" ||
		!strings.Contains(r.Unschedulable[0].Reason, "held back by its volumes: volume data: PersistentVolumeClaim default/gone does not exist") {
		t.Fatalf("plan of %d pods, unschedulable %+v; want 4 planned and web-1 held back for its missing claim", r.Pods, r.Unschedulable)
	}
	for _, p := range r.Plan.NewClaims {
		for _, pod := range p.Pods {
			if pod.Name != "web-0" {
				continue
			}
			for _, o := range p.Options {
				if o.Zone != "us-east-1c" {
					t.Errorf("web-0's claim may launch %s in %s, want us-east-1c only", o.InstanceType.Name, o.Zone)
				}
			}
			return
		}
	}
	t.Fatal("web-0 is on no new claim")
}
