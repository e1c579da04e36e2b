package aws

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// A launch that goes on-demand only because spot had no capacity carries the
// spot-fallback annotation; one on-demand for any other reason does not.
func TestSpotFallbackIsRecorded(t *testing.T) {
	types := []string{"m5.xlarge", "c5.xlarge", "m6i.xlarge"}
	tests := []struct {
		name string
		// iceWorld: every spot pool answers InsufficientInstanceCapacity.
		iceWorld bool
		// iceCache: every spot offering is already hidden by the ICE cache.
		iceCache bool
		ct       []string
		wantCT   string
		want     bool
	}{
		{name: "spot launched", ct: []string{nsv1.CapacityTypeSpot, nsv1.CapacityTypeOnDemand}, wantCT: nsv1.CapacityTypeSpot},
		{name: "spot failed in this launch", iceWorld: true, ct: []string{nsv1.CapacityTypeSpot, nsv1.CapacityTypeOnDemand},
			wantCT: nsv1.CapacityTypeOnDemand, want: true},
		{name: "claim narrowed to on-demand while the cache hides spot", iceCache: true, ct: []string{nsv1.CapacityTypeOnDemand},
			wantCT: nsv1.CapacityTypeOnDemand, want: true},
		{name: "claim on-demand by choice, spot available", ct: []string{nsv1.CapacityTypeOnDemand}, wantCT: nsv1.CapacityTypeOnDemand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			if tt.iceWorld {
				for _, p := range e.world.Pools() {
					if p.CapacityType == fakeaws.CapacitySpot {
						e.world.InjectICE(p.InstanceType, p.Zone, p.CapacityType, epoch.Add(time.Hour))
					}
				}
			}
			if tt.iceCache {
				e.ice.MarkCapacityTypeUnavailable(nsv1.CapacityTypeSpot, "test")
			}
			got := e.create(sized(newClaim("c1", reqIn(corev1.LabelInstanceTypeStable, types...), reqIn(nsv1.LabelCapacityType, tt.ct...))))
			if got.Status.CapacityType != tt.wantCT {
				t.Fatalf("capacity type = %s, want %s", got.Status.CapacityType, tt.wantCT)
			}
			v, marked := got.Annotations[nsv1.AnnotationSpotFallback]
			if marked != tt.want {
				t.Fatalf("spot-fallback annotation present = %v (%q), want %v", marked, v, tt.want)
			}
			if marked {
				if at, err := time.Parse(time.RFC3339, v); err != nil || at.IsZero() {
					t.Errorf("spot-fallback = %q, want an RFC 3339 launch time (%v)", v, err)
				}
			}
		})
	}
}
