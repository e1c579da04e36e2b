package provisioning

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

func pvc(name, volume, class string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	c.Spec.VolumeName = volume
	if class != "" {
		c.Spec.StorageClassName = &class
	}
	return c
}

// pv is a PersistentVolume pinned by one required term per key/values pair.
func pv(name string, terms ...corev1.NodeSelectorRequirement) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if len(terms) > 0 {
		v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: terms}}}}
	}
	return v
}

func in(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func storageClass(name string, mode storagev1.VolumeBindingMode, zones ...string) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &mode}
	if len(zones) > 0 {
		sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: "topology.ebs.csi.aws.com/zone", Values: zones}}}}
	}
	return sc
}

func withClaim(p *corev1.Pod, volume, claim string) *corev1.Pod {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return p
}

func withEphemeral(p *corev1.Pod, volume string) *corev1.Pod {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
		Ephemeral: &corev1.EphemeralVolumeSource{}}})
	return p
}

func TestVolumeRequirements(t *testing.T) {
	const zone = corev1.LabelTopologyZone
	ebsZone := "topology.ebs.csi.aws.com/zone"
	deleting := pvc("deleting", "pv-b", "")
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	lost := pvc("lost", "pv-gone", "")
	lost.Status.Phase = corev1.ClaimLost
	local := pv("pv-local", in(corev1.LabelHostname, "ip-10-0-0-1"), in(zone, "us-east-1a"))
	local.Spec.Local = &corev1.LocalVolumeSource{Path: "/mnt/disk"}
	hostOnly := pv("pv-host-only", in(corev1.LabelHostname, "ip-10-0-0-2"))
	hostOnly.Spec.Local = &corev1.LocalVolumeSource{Path: "/mnt/disk"}
	twoTerms := pv("pv-ab")
	twoTerms.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{in(zone, "us-east-1a")}},
		{MatchExpressions: []corev1.NodeSelectorRequirement{in(zone, "us-east-1b")}},
	}}}
	st := NewStorage(
		[]*corev1.PersistentVolumeClaim{
			pvc("bound-b", "pv-b", "gp3"), pvc("bound-ebs-c", "pv-ebs-c", "gp3"), pvc("bound-free", "pv-free", "gp3"),
			pvc("wffc-c", "", "wffc-c"), pvc("wffc-any", "", "wffc-any"), pvc("immediate", "", "immediate"),
			pvc("no-class", "", ""), pvc("missing-class", "", "nope"), pvc("missing-pv", "pv-nope", "gp3"),
			deleting, lost, pvc("local", "pv-local", ""), pvc("ab", "pv-ab", ""), pvc("p-scratch", "", "wffc-c"),
			pvc("host-only", "pv-host-only", ""),
		},
		[]*corev1.PersistentVolume{pv("pv-b", in(zone, "us-east-1b")), pv("pv-ebs-c", in(ebsZone, "us-east-1c")), pv("pv-free"), local, twoTerms, hostOnly},
		[]*storagev1.StorageClass{storageClass("gp3", storagev1.VolumeBindingWaitForFirstConsumer),
			storageClass("wffc-c", storagev1.VolumeBindingWaitForFirstConsumer, "us-east-1c"),
			storageClass("wffc-any", storagev1.VolumeBindingWaitForFirstConsumer),
			storageClass("immediate", storagev1.VolumeBindingImmediate)},
	)
	term := func(rs ...corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement { return rs }
	tests := []struct {
		name      string
		pod       *corev1.Pod
		want      [][]corev1.NodeSelectorRequirement
		wantZones []string
		wantErr   string
	}{
		{name: "no volumes", pod: pendingPod("p")},
		{name: "emptyDir only", pod: func() *corev1.Pod {
			p := pendingPod("p")
			p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			return p
		}()},
		{name: "bound PV pinned to a zone", pod: withClaim(pendingPod("p"), "data", "bound-b"),
			want: [][]corev1.NodeSelectorRequirement{term(in(zone, "us-east-1b"))}, wantZones: []string{"us-east-1b"}},
		{name: "EBS CSI zone key becomes the zone label", pod: withClaim(pendingPod("p"), "data", "bound-ebs-c"),
			want: [][]corev1.NodeSelectorRequirement{term(in(zone, "us-east-1c"))}, wantZones: []string{"us-east-1c"}},
		{name: "bound PV without node affinity", pod: withClaim(pendingPod("p"), "data", "bound-free")},
		{name: "local PV pinned by hostname only: any node", pod: withClaim(pendingPod("p"), "data", "host-only")},
		{name: "PV alternatives stay OR-ed", pod: withClaim(pendingPod("p"), "data", "ab"),
			want:      [][]corev1.NodeSelectorRequirement{term(in(zone, "us-east-1a")), term(in(zone, "us-east-1b"))},
			wantZones: []string{"us-east-1a", "us-east-1b"}},
		{name: "local PV drops its hostname", pod: withClaim(pendingPod("p"), "data", "local"),
			want: [][]corev1.NodeSelectorRequirement{term(in(zone, "us-east-1a"))}, wantZones: []string{"us-east-1a"}},
		{name: "WaitForFirstConsumer with allowedTopologies", pod: withClaim(pendingPod("p"), "data", "wffc-c"),
			want: [][]corev1.NodeSelectorRequirement{term(in(zone, "us-east-1c"))}, wantZones: []string{"us-east-1c"}},
		{name: "WaitForFirstConsumer without allowedTopologies", pod: withClaim(pendingPod("p"), "data", "wffc-any")},
		{name: "two volumes are AND-ed", pod: withClaim(withClaim(pendingPod("p"), "a", "bound-b"), "b", "ab"),
			want:      [][]corev1.NodeSelectorRequirement{term(in(zone, "us-east-1b"), in(zone, "us-east-1a")), term(in(zone, "us-east-1b"), in(zone, "us-east-1b"))},
			wantZones: []string{"us-east-1b"}},
		{name: "generic ephemeral volume reads claim <pod>-<volume>", pod: withEphemeral(pendingPod("p"), "scratch"),
			want: [][]corev1.NodeSelectorRequirement{term(in(zone, "us-east-1c"))}, wantZones: []string{"us-east-1c"}},
		{name: "ephemeral volume of a bound pod is made anew", pod: withEphemeral(boundPod("q", "n1"), "scratch")},
		{name: "ephemeral claim not created yet", pod: withEphemeral(pendingPod("q"), "scratch"),
			wantErr: "volume scratch: PersistentVolumeClaim default/q-scratch does not exist"},
		{name: "missing claim", pod: withClaim(pendingPod("p"), "data", "nope"),
			wantErr: "volume data: PersistentVolumeClaim default/nope does not exist"},
		{name: "missing StorageClass", pod: withClaim(pendingPod("p"), "data", "missing-class"),
			wantErr: "names StorageClass nope, which does not exist"},
		{name: "missing PV", pod: withClaim(pendingPod("p"), "data", "missing-pv"),
			wantErr: "is bound to PersistentVolume pv-nope, which does not exist"},
		{name: "unbound Immediate claim waits", pod: withClaim(pendingPod("p"), "data", "immediate"),
			wantErr: "its StorageClass immediate binds Immediately"},
		{name: "unbound claim without a class waits", pod: withClaim(pendingPod("p"), "data", "no-class"),
			wantErr: "is unbound and names no StorageClass"},
		{name: "claim being deleted", pod: withClaim(pendingPod("p"), "data", "deleting"), wantErr: "is being deleted"},
		{name: "lost claim", pod: withClaim(pendingPod("p"), "data", "lost"), wantErr: `is Lost (its PersistentVolume "pv-gone" is gone)`},
		{name: "nil storage: the claim is unknown", pod: withClaim(pendingPod("p"), "data", "bound-b"), wantErr: "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := st
			if strings.HasPrefix(tt.name, "nil storage") {
				s = nil
			}
			got, err := VolumeRequirements(s, tt.pod)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Terms, tt.want) {
				t.Errorf("terms %v, want %v", got.Terms, tt.want)
			}
			zones, source := VolumeZones(got)
			if !reflect.DeepEqual(zones, tt.wantZones) && (len(zones) != 0 || len(tt.wantZones) != 0) {
				t.Errorf("zones %v, want %v", zones, tt.wantZones)
			}
			if (len(zones) > 0) != (source != "") {
				t.Errorf("zones %v with source %q", zones, source)
			}
		})
	}
}

func TestWithVolumeTopology(t *testing.T) {
	const zone = corev1.LabelTopologyZone
	vt := VolumeTopology{Terms: [][]corev1.NodeSelectorRequirement{{in(zone, "us-east-1b")}}}
	plain := pendingPod("plain")
	if got := WithVolumeTopology(plain, VolumeTopology{}); got != plain {
		t.Error("a pod its volumes do not restrict must be passed through as is")
	}
	got := WithVolumeTopology(plain, vt)
	if got == plain || plain.Spec.Affinity != nil {
		t.Fatal("the pod must be copied, never changed")
	}
	alts := scheduling.PodRequirements(got)
	if len(alts) != 1 || !alts[0].Matches(map[string]string{zone: "us-east-1b"}) || alts[0].Matches(map[string]string{zone: "us-east-1a"}) {
		t.Errorf("requirements %v, want zone In [us-east-1b]", alts)
	}

	// Every OR-ed term of the pod's own affinity keeps its requirements and
	// gains the volume's.
	two := pendingPod("two")
	two.Spec.NodeSelector = map[string]string{"team": "a"}
	two.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{in("arch", "arm64")}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{in("arch", "amd64")}},
		}}}}
	alts = scheduling.PodRequirements(WithVolumeTopology(two, vt))
	if len(alts) != 2 {
		t.Fatalf("%d alternatives, want 2", len(alts))
	}
	for i, arch := range []string{"arm64", "amd64"} {
		ok := map[string]string{"team": "a", "arch": arch, zone: "us-east-1b"}
		otherZone := map[string]string{"team": "a", "arch": arch, zone: "us-east-1a"}
		if !alts[i].Matches(ok) || alts[i].Matches(otherZone) {
			t.Errorf("alternative %d = %v, want team=a, arch=%s, zone us-east-1b", i, alts[i], arch)
		}
	}
	if len(two.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions) != 1 {
		t.Error("the snapshot's pod was changed")
	}
}

func TestPendingPodsAppliesVolumeTopology(t *testing.T) {
	pinned := withClaim(pendingPod("pinned"), "data", "data-0")
	orphan := withClaim(pendingPod("orphan"), "data", "missing")
	free := pendingPod("free")
	snap := NewSnapshot([]*corev1.Pod{pinned, orphan, free}, nil, nil, nil, nil, nil)
	snap.Storage = NewStorage([]*corev1.PersistentVolumeClaim{pvc("data-0", "pv-0", "gp3")},
		[]*corev1.PersistentVolume{pv("pv-0", in("topology.ebs.csi.aws.com/zone", "us-east-1b"))}, nil)
	got := PendingPods(snap, noNominations, now)
	if want := []string{"free", "pinned"}; !reflect.DeepEqual(uids(got.Pods), want) {
		t.Fatalf("planned %v, want %v", uids(got.Pods), want)
	}
	if len(got.Blocked) != 1 || got.Blocked[0].Pod != orphan || !strings.Contains(got.Blocked[0].Reason, "default/missing does not exist") {
		t.Errorf("blocked %+v, want orphan for its missing claim", got.Blocked)
	}
	for _, p := range got.Pods {
		if p.UID != "pinned" {
			if p != free {
				t.Error("a pod without volumes must be planned as the snapshot's own object")
			}
			continue
		}
		alts := scheduling.PodRequirements(p)
		if len(alts) != 1 || alts[0].Get(corev1.LabelTopologyZone) == nil || !alts[0].Matches(map[string]string{corev1.LabelTopologyZone: "us-east-1b"}) ||
			alts[0].Matches(map[string]string{corev1.LabelTopologyZone: "us-east-1a"}) {
			t.Errorf("pinned pod planned with %v, want zone In [us-east-1b]", alts)
		}
	}
}

// The solver reads the carried volume topology wherever it reads node
// affinity: of two nodes with room, a pod whose volume is in us-east-1b is
// nominated to the one in us-east-1b, whichever the solver would prefer.
func TestVolumeTopologyNominatesToTheVolumesZone(t *testing.T) {
	node := func(name, zone string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelTopologyZone: zone, corev1.LabelHostname: name}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
				corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}}}
	}
	for _, zone := range []string{"us-east-1a", "us-east-1b"} {
		pod := withClaim(pendingPod("db-0"), "data", "data-db-0")
		snap := NewSnapshot([]*corev1.Pod{pod}, []*corev1.Node{node("node-a", "us-east-1a"), node("node-b", "us-east-1b")}, nil, nil, nil, nil)
		snap.Storage = NewStorage([]*corev1.PersistentVolumeClaim{pvc("data-db-0", "pv-0", "")},
			[]*corev1.PersistentVolume{pv("pv-0", in("topology.ebs.csi.aws.com/zone", zone))}, nil)
		in, _ := BuildInput(snap, PendingPods(snap, noNominations, now), nil, scheduling.Options{})
		plan, err := scheduling.Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		want := "node-a"
		if zone == "us-east-1b" {
			want = "node-b"
		}
		if len(plan.Nominations) != 1 || plan.Nominations[0].Node != want {
			t.Errorf("volume in %s: nominations %+v (unschedulable %+v), want db-0 on %s", zone, plan.Nominations, plan.Unschedulable, want)
		}
	}
}
