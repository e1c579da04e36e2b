package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
)

func TestNewRefusesDoubleRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatalf("first registration: %v", err)
	}
	if _, err := New(reg); err == nil {
		t.Fatal("registering twice on one registry succeeded")
	}
}

func TestInstrumentCountsCallsAndErrorClasses(t *testing.T) {
	m := MustNewForTest()
	cp := fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, "zone-a"))
	cp.NextCreateErrs = []error{cloudprovider.NewInsufficientCapacityError(errors.New("ice")), errors.New("boom")}
	ic := Instrument(cp, m)
	claim := &nsv1.NodeClaim{}
	claim.Name = "c"
	for range 3 {
		_, _ = ic.Create(context.Background(), claim)
	}
	if got := testutil.ToFloat64(m.CloudCalls.WithLabelValues("Create")); got != 3 {
		t.Errorf("calls = %v, want 3", got)
	}
	tests := []struct {
		class string
		want  float64
	}{{"insufficient_capacity", 1}, {"other", 1}, {"not_found", 0}}
	for _, tt := range tests {
		if got := testutil.ToFloat64(m.CloudErrors.WithLabelValues("Create", tt.class)); got != tt.want {
			t.Errorf("errors{%s} = %v, want %v", tt.class, got, tt.want)
		}
	}
}

func TestErrorClass(t *testing.T) {
	base := errors.New("x")
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{cloudprovider.NewInsufficientCapacityError(base), "insufficient_capacity"},
		{cloudprovider.NewNodeClaimNotFoundError(base), "not_found"},
		{cloudprovider.NewNodeClassNotReadyError(base), "nodeclass_not_ready"},
		{fmt.Errorf("launching: %w", cloudprovider.NewCloudUnavailableError(base)), "cloud_unavailable"},
		{cloudprovider.NewLaunchRejectedError(base), "launch_rejected"},
		{base, "other"},
	}
	for _, tt := range tests {
		if got := ErrorClass(tt.err); got != tt.want {
			t.Errorf("ErrorClass(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
