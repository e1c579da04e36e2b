package pricing

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsevents "github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/providers/aws"
)

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// fakeSource answers refreshes with the queued errors, then success, and
// stamps the status with the clock like the provider does.
type fakeSource struct {
	clk    *clocktesting.FakeClock
	errs   map[string][]error
	calls  map[string]int
	status aws.CatalogStatus
}

func (f *fakeSource) step(kind string, at *time.Time) error {
	f.calls[kind]++
	if q := f.errs[kind]; len(q) > 0 {
		f.errs[kind] = q[1:]
		if q[0] != nil {
			return q[0]
		}
	}
	*at = f.clk.Now()
	return nil
}
func (f *fakeSource) RefreshSpotPrices(context.Context) error {
	return f.step("spot", &f.status.SpotPricesAt)
}
func (f *fakeSource) RefreshOfferings(context.Context) error {
	return f.step("offerings", &f.status.OfferingsAt)
}
func (f *fakeSource) RefreshOnDemandPrices(context.Context) error {
	return f.step("ondemand", &f.status.OnDemandAt)
}
func (f *fakeSource) CatalogStatus() aws.CatalogStatus { return f.status }

func TestRefreshSteps(t *testing.T) {
	down := errors.New("pricing unreachable")
	tests := []struct {
		name         string
		kind         string
		errs         []error         // per step; nil succeeds (steps past the list succeed)
		wantAfter    []time.Duration // RequeueAfter per step; 0 for a failed step
		wantEvents   int
		wantSnapshot float64
		wantLast     bool
	}{
		{name: "spot every 5 minutes", kind: "spot", wantAfter: []time.Duration{5 * time.Minute, 5 * time.Minute}, wantLast: true},
		{name: "offerings every 12 hours", kind: "offerings", wantAfter: []time.Duration{12 * time.Hour}, wantLast: true},
		{name: "on-demand falls back to the snapshot until Pricing answers", kind: "ondemand", errs: []error{down, down},
			wantAfter: []time.Duration{0, 0, 12 * time.Hour}, wantEvents: 1, wantSnapshot: 0, wantLast: true},
		{name: "on-demand never answering keeps the snapshot flag up", kind: "ondemand", errs: []error{down},
			wantAfter: []time.Duration{0}, wantEvents: 1, wantSnapshot: 1},
		{name: "a later on-demand failure keeps the prices read", kind: "ondemand", errs: []error{nil, down},
			wantAfter: []time.Duration{12 * time.Hour, 0}, wantEvents: 0, wantSnapshot: 0, wantLast: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(epoch)
			src := &fakeSource{clk: clk, errs: map[string][]error{tt.kind: tt.errs}, calls: map[string]int{}}
			m, err := NewMetrics(prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			scheme := runtime.NewScheme()
			if err := awsv1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			nc := &awsv1.EC2NodeClass{}
			nc.Name = "default"
			kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(nc).Build()
			fr := events.NewFakeRecorder(10)
			rec := nsevents.NewRecorder(fr, clk, time.Hour)
			var step func() (time.Duration, error)
			switch tt.kind {
			case "spot":
				x := NewSpotPrices(src, clk, m, 0)
				step = func() (time.Duration, error) { r, err := x.Reconcile(context.Background()); return r.RequeueAfter, err }
			case "offerings":
				x := NewOfferings(src, clk, m, 0)
				step = func() (time.Duration, error) { r, err := x.Reconcile(context.Background()); return r.RequeueAfter, err }
			case "ondemand":
				x := NewOnDemandPrices(src, kube, rec, clk, m, 0)
				step = func() (time.Duration, error) { r, err := x.Reconcile(context.Background()); return r.RequeueAfter, err }
			}
			var lastOK time.Time
			for i, want := range tt.wantAfter {
				clk.Step(time.Minute)
				after, err := step()
				if err == nil {
					lastOK = clk.Now()
				}
				if (err != nil) != (want == 0) || after != want {
					t.Fatalf("step %d: RequeueAfter %v, error %v; want %v", i, after, err, want)
				}
			}
			close(fr.Events)
			var evs []string
			for e := range fr.Events {
				evs = append(evs, e)
			}
			if len(evs) != tt.wantEvents {
				t.Fatalf("events %q, want %d", evs, tt.wantEvents)
			}
			for _, e := range evs {
				if !strings.Contains(e, ReasonOnDemandSnapshot) || !strings.Contains(e, "pricing:GetProducts") {
					t.Errorf("event %q does not name the fallback and the permission", e)
				}
			}
			if tt.kind == "ondemand" {
				if got := testutil.ToFloat64(m.OnDemandFromSnapshot); got != tt.wantSnapshot {
					t.Errorf("on_demand_prices_from_snapshot = %v, want %v", got, tt.wantSnapshot)
				}
			}
			data := map[string]string{"spot": DataSpotPrices, "offerings": DataOfferings, "ondemand": DataOnDemandPrices}[tt.kind]
			last := testutil.ToFloat64(m.LastRefresh.WithLabelValues(data))
			if tt.wantLast != (last > 0) {
				t.Errorf("last refresh %v, want set: %v", last, tt.wantLast)
			}
			if tt.wantLast && last != float64(lastOK.Unix()) {
				t.Errorf("last refresh %v, want the last success at %v", last, lastOK.Unix())
			}
		})
	}
}
