package garbagecollection

import (
	"context"
	"errors"
	"testing"
	"time"
)

type collectorFunc func(context.Context) ([]string, error)

func (f collectorFunc) GarbageCollectLaunchTemplates(ctx context.Context) ([]string, error) {
	return f(ctx)
}

func TestLaunchTemplatesStep(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantAfter time.Duration
		wantErr   bool
	}{
		{name: "a pass waits for the next interval", wantAfter: 10 * time.Minute},
		{name: "a failed pass is retried with backoff", err: errors.New("throttled"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			s := NewLaunchTemplates(collectorFunc(func(context.Context) ([]string, error) { calls++; return []string{"nodesmith/x"}, tt.err }), 0)
			res, err := s.Reconcile(context.Background())
			if (err != nil) != tt.wantErr || res.RequeueAfter != tt.wantAfter || calls != 1 {
				t.Fatalf("result %+v, error %v, calls %d", res, err, calls)
			}
		})
	}
}
