package nodeclaim

import (
	"errors"
	"testing"
	"time"

	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

func TestLiveness(t *testing.T) {
	tests := []struct {
		name        string
		launchFails bool
		launchErr   error // what the failing launch returns (default: an error with an answer)
		advance     time.Duration
		wantDeleted bool
	}{
		{name: "launch keeps failing, within the timeout", launchFails: true, advance: 4 * time.Minute},
		{name: "launch keeps failing past the timeout", launchFails: true, advance: 6 * time.Minute, wantDeleted: true},
		{name: "the cloud never answers, past the timeout: kept", launchFails: true, advance: time.Hour,
			launchErr: cloudprovider.NewCloudUnavailableError(errors.New("RequestLimitExceeded through every retry"))},
		{name: "launched, no node, within the registration timeout", advance: 14 * time.Minute},
		{name: "launched, no node past the registration timeout", advance: 16 * time.Minute, wantDeleted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			if tt.launchFails {
				f.cloud.CreateErr = errors.New("InvalidParameterValue")
				if tt.launchErr != nil {
					f.cloud.CreateErr = tt.launchErr
				}
			}
			claim := create(t, controllertest.NodeClaim(uniq("live"), "pool-a"))
			f.cluster.Nominate("pod-x", claim.Name)
			res, err := f.reconcile(t, claim.Name)
			if tt.launchFails != (err != nil) {
				t.Fatalf("first reconcile error = %v", err)
			}
			if !tt.launchFails && res.RequeueAfter != 15*time.Minute {
				// The registration wait is announced so the claim is looked at again in time.
				t.Fatalf("RequeueAfter = %v after launch, want the registration timeout", res.RequeueAfter)
			}
			f.clk.Step(tt.advance)
			_, _ = f.reconcile(t, claim.Name)
			got := get(t, claim.Name)
			if deleted := !got.DeletionTimestamp.IsZero(); deleted != tt.wantDeleted {
				t.Fatalf("deleted = %v, want %v (conditions %+v)", deleted, tt.wantDeleted, got.Status.Conditions)
			}
			if tt.wantDeleted && (len(f.replayed) != 1 || f.replayed[0] != "pod-x") {
				t.Fatalf("replanned pods = %v, want [pod-x]", f.replayed)
			}
		})
	}
}
