package scheduler

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VolumeBinding as upstream behaves for the cases the simulator plays: a
// bound volume's node affinity filters nodes, a WaitForFirstConsumer
// class's allowedTopologies filter nodes, and a missing claim or an
// unbound Immediate claim rejects the pod before any node is filtered.
func TestVolumeBindingFilter(t *testing.T) {
	claimPod := func(claim string) podOpt {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
		}
	}
	claim := func(name, volume, class string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume, StorageClassName: &class}}
	}
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-b"}, Spec: corev1.PersistentVolumeSpec{
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z2"}}}}}}}}}
	nodes := []*corev1.Node{mkNode("a", zone("z1")), mkNode("b", zone("z2")), mkNode("c", zone("z3"))}
	build := func() *Scheduler {
		s := cluster(nodes)
		s.UpsertVolume(pv)
		s.UpsertClaim(claim("bound", "pv-b", "gp3"))
		s.UpsertClaim(claim("wffc", "", "zonal"))
		s.UpsertClaim(claim("wffc-any", "", "anywhere"))
		s.UpsertClaim(claim("immediate", "", "now"))
		s.UpsertClaim(claim("dangling", "pv-gone", "gp3"))
		s.UpsertStorageClass(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "zonal"}, VolumeBindingMode: &wffc,
			AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
				{Key: corev1.LabelTopologyZone, Values: []string{"z3"}}}}}})
		s.UpsertStorageClass(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "anywhere"}, VolumeBindingMode: &wffc})
		s.UpsertStorageClass(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "now"}, VolumeBindingMode: &immediate})
		return s
	}
	tests := []struct {
		name       string
		pod        *corev1.Pod
		wantNode   string
		want       map[string]int
		wantPreMsg string
	}{
		{name: "bound volume in z2", pod: mkPod("p", claimPod("bound")), wantNode: "b"},
		{name: "WaitForFirstConsumer allowed in z3", pod: mkPod("p", claimPod("wffc")), wantNode: "c"},
		{name: "WaitForFirstConsumer anywhere", pod: mkPod("p", claimPod("wffc-any")), wantNode: "a"},
		{name: "bound volume and a class elsewhere", pod: mkPod("p", claimPod("bound"), claimPod("wffc")),
			want: map[string]int{reasonVolumeNodeConflict: 2, reasonVolumeBindConflict: 1}},
		{name: "claim not found", pod: mkPod("p", claimPod("nope")), wantPreMsg: `0/3 nodes are available: persistentvolumeclaim "nope" not found.`},
		{name: "unbound Immediate claim", pod: mkPod("p", claimPod("immediate")), wantPreMsg: "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."},
		{name: "claim bound to a missing volume", pod: mkPod("p", claimPod("dangling")), wantPreMsg: "0/3 nodes are available: pvc(s) bound to non-existent pv(s)."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := build()
			node, err := s.Schedule(tt.pod)
			if tt.wantPreMsg != "" {
				if err == nil || err.Error() != tt.wantPreMsg {
					t.Fatalf("error %v, want %q", err, tt.wantPreMsg)
				}
				return
			}
			if tt.want != nil {
				fe, ok := err.(*FitError)
				if !ok || !maps.Equal(fe.Reasons, tt.want) {
					t.Fatalf("error %v, want reasons %v", err, tt.want)
				}
				return
			}
			if err != nil || node != tt.wantNode {
				t.Fatalf("node %q error %v, want node %q", node, err, tt.wantNode)
			}
		})
	}
}
