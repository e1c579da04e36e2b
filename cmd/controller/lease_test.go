package main

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

// TestReleaseHandsBackOnlyOurOwnLease: after a graceful stop the Lease is
// handed back (no holder, a 1 s duration, as client-go's own release
// writes it) only if this process still holds it.
func TestReleaseHandsBackOnlyOurOwnLease(t *testing.T) {
	tests := []struct {
		name, holder string
		released     bool
	}{
		{name: "held by this process", holder: "me_1", released: true},
		{name: "taken by another replica", holder: "other_2", released: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := fake.NewClientset(&coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: "nodesmith", Name: leaseName},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(tt.holder), LeaseDurationSeconds: ptr.To[int32](15),
					LeaseTransitions: ptr.To[int32](3), RenewTime: &metav1.MicroTime{Time: metav1.Now().Time}},
			})
			lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "nodesmith", leaseName,
				kc.CoreV1(), kc.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: "me_1"})
			if err != nil {
				t.Fatal(err)
			}
			(&leaderLease{lock: lock, identity: "me_1"}).release()
			got, err := kc.CoordinationV1().Leases("nodesmith").Get(context.Background(), leaseName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			holder, duration := ptr.Deref(got.Spec.HolderIdentity, ""), ptr.Deref(got.Spec.LeaseDurationSeconds, 0)
			if tt.released && (holder != "" || duration != 1 || ptr.Deref(got.Spec.LeaseTransitions, 0) != 3) {
				t.Errorf("after release: holder %q, duration %d s, transitions %d; want no holder, 1 s, 3", holder, duration, ptr.Deref(got.Spec.LeaseTransitions, 0))
			}
			if !tt.released && (holder != tt.holder || duration != 15) {
				t.Errorf("another replica's lease changed: holder %q, duration %d s", holder, duration)
			}
		})
	}
}
