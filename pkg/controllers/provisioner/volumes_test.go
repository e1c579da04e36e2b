package provisioner

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

// volumePod creates a pending pod of the fixture's pool mounting claim.
func (f *fixture) volumePod(t *testing.T, name, claim string) {
	t.Helper()
	ctx := context.Background()
	p := controllertest.Pod(f.ns, name, "500m")
	p.Spec.NodeSelector = f.pool.Spec.Template.ObjectMeta.Labels
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	if err := h.Direct.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now()}}
	if err := h.Direct.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, p)
}

func (f *fixture) claimFor(t *testing.T, name, volume, class string) {
	t.Helper()
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume, StorageClassName: &class,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}}}
	if err := h.Direct.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, c)
}

// zonesOf is the NodeClaim's zone requirement's values.
func zonesOf(t *testing.T, f *fixture) []string {
	t.Helper()
	claims := f.claims(t)
	if len(claims) != 1 {
		t.Fatalf("%d nodeclaims, want 1", len(claims))
	}
	for _, r := range claims[0].Spec.Requirements {
		if r.Key == corev1.LabelTopologyZone {
			if r.Operator != corev1.NodeSelectorOpIn {
				t.Fatalf("zone requirement %v, want In", r)
			}
			return r.Values
		}
	}
	t.Fatalf("nodeclaim %s has no zone requirement: %v", claims[0].Name, claims[0].Spec.Requirements)
	return nil
}

// A pod whose claim is bound to a PersistentVolume the EBS CSI driver
// pinned to us-east-1b gets a NodeClaim in us-east-1b only, though the
// pool's types are sold in three zones.
func TestProvisionFollowsBoundVolumeZone(t *testing.T) {
	f := newFixtureIn(t, 0, "1", Options{}, "us-east-1a", "us-east-1b", "us-east-1c")
	ctx := context.Background()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + f.ns}, Spec: corev1.PersistentVolumeSpec{
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: "ebs.csi.aws.com", VolumeHandle: "vol-0123456789abcdef0"}},
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.ebs.csi.aws.com/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1b"}}}}}}},
	}}
	if err := h.Direct.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Direct.Delete(context.Background(), pv) })
	h.Cached(t, pv)
	f.claimFor(t, "data-db-0", pv.Name, "gp3")
	f.volumePod(t, "db-0", "data-db-0")
	if err := f.p.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if got := zonesOf(t, f); !slices.Equal(got, []string{"us-east-1b"}) {
		t.Errorf("nodeclaim zones %v, want exactly [us-east-1b]", got)
	}
}

// An unbound claim of a WaitForFirstConsumer class allowed only in
// us-east-1c: the NodeClaim launches there, where the volume will be made.
func TestProvisionFollowsStorageClassTopology(t *testing.T) {
	f := newFixtureIn(t, 0, "1", Options{}, "us-east-1a", "us-east-1b", "us-east-1c")
	ctx := context.Background()
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp3-c-" + f.ns}, Provisioner: "ebs.csi.aws.com",
		VolumeBindingMode: &wffc, AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: "topology.ebs.csi.aws.com/zone", Values: []string{"us-east-1c"}}}}}}
	if err := h.Direct.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Direct.Delete(context.Background(), sc) })
	h.Cached(t, sc)
	f.claimFor(t, "data-db-0", "", sc.Name)
	f.volumePod(t, "db-0", "data-db-0")
	if err := f.p.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if got := zonesOf(t, f); !slices.Equal(got, []string{"us-east-1c"}) {
		t.Errorf("nodeclaim zones %v, want exactly [us-east-1c]", got)
	}
}

// A pod whose claim does not exist is not launched for; an Event says why.
func TestProvisionHoldsBackPodWithoutItsClaim(t *testing.T) {
	f := newFixtureIn(t, 0, "1", Options{}, "us-east-1a", "us-east-1b")
	f.volumePod(t, "db-0", "data-db-0")
	if err := f.p.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	if claims := f.claims(t); len(claims) != 0 {
		t.Fatalf("%d nodeclaims for a pod whose claim does not exist, want none", len(claims))
	}
	want := "PersistentVolumeClaim " + f.ns + "/data-db-0 does not exist"
	for {
		select {
		case e := <-f.events.Events:
			if strings.Contains(e, "ProvisioningBlocked") && strings.Contains(e, want) {
				return
			}
		default:
			t.Fatalf("no ProvisioningBlocked event saying %q", want)
		}
	}
}
