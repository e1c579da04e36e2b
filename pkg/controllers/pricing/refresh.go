package pricing

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/garbagecollection"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/providers/aws"
)

// Default refresh intervals.
const (
	DefaultSpotInterval     = 5 * time.Minute
	DefaultCatalogInterval  = 12 * time.Hour
	ReasonOnDemandSnapshot  = "OnDemandPricesFromSnapshot"
	onDemandFallbackMessage = "on-demand prices come from the embedded us-east-1 snapshot because the AWS Pricing API did not answer " +
		"(the controller's role needs pricing:GetProducts; the controller's log has the error)"
)

// Refresher is the part of the AWS provider the singletons drive.
type Refresher interface {
	RefreshSpotPrices(ctx context.Context) error
	RefreshOfferings(ctx context.Context) error
	RefreshOnDemandPrices(ctx context.Context) error
	CatalogStatus() aws.CatalogStatus
}

var _ Refresher = (*aws.Provider)(nil)

// refresh is one catalog part on a timer.
type refresh struct {
	name     string
	data     string
	interval time.Duration
	run      func(ctx context.Context) error
	at       func(aws.CatalogStatus) time.Time
	src      Refresher
	clk      clock.Clock
	metrics  *Metrics
	// failed, when set, runs after a failed refresh (the on-demand fallback Event).
	failed func(ctx context.Context, err error)
}

var _ operator.Singleton = (*refresh)(nil)

func (r *refresh) Name() string { return r.name }

// Reconcile reads the part once. A failure is returned, so the driver
// retries with backoff; the provider keeps what it read last.
func (r *refresh) Reconcile(ctx context.Context) (reconcile.Result, error) {
	if err := r.run(ctx); err != nil {
		r.metrics.Failures.WithLabelValues(r.data).Inc()
		if r.failed != nil {
			r.failed(ctx, err)
		}
		return reconcile.Result{}, fmt.Errorf("refreshing %s: %w", r.data, err)
	}
	r.metrics.LastRefresh.WithLabelValues(r.data).Set(float64(r.at(r.src.CatalogStatus()).Unix()))
	if r.data == DataOnDemandPrices {
		r.metrics.OnDemandFromSnapshot.Set(0)
	}
	return reconcile.Result{RequeueAfter: r.interval}, nil
}

// NewSpotPrices refreshes spot prices every interval (default 5 minutes).
func NewSpotPrices(src Refresher, clk clock.Clock, m *Metrics, interval time.Duration) operator.Singleton {
	return &refresh{name: "pricing.spot", data: DataSpotPrices, interval: orDefault(interval, DefaultSpotInterval),
		run: src.RefreshSpotPrices, at: func(s aws.CatalogStatus) time.Time { return s.SpotPricesAt }, src: src, clk: clk, metrics: m}
}

// NewOfferings refreshes where each type is offered every interval (default 12 hours).
func NewOfferings(src Refresher, clk clock.Clock, m *Metrics, interval time.Duration) operator.Singleton {
	return &refresh{name: "pricing.offerings", data: DataOfferings, interval: orDefault(interval, DefaultCatalogInterval),
		run: src.RefreshOfferings, at: func(s aws.CatalogStatus) time.Time { return s.OfferingsAt }, src: src, clk: clk, metrics: m}
}

// NewOnDemandPrices refreshes on-demand prices from the Pricing API every
// interval (default 12 hours). While it has never succeeded, each failure
// sets the snapshot-fallback gauge and publishes a Warning Event on every
// EC2NodeClass (de-duplicated by the recorder), naming the permission.
func NewOnDemandPrices(src Refresher, kube client.Reader, rec *events.Recorder, clk clock.Clock, m *Metrics, interval time.Duration) operator.Singleton {
	r := &refresh{name: "pricing.ondemand", data: DataOnDemandPrices, interval: orDefault(interval, DefaultCatalogInterval),
		run: src.RefreshOnDemandPrices, at: func(s aws.CatalogStatus) time.Time { return s.OnDemandAt }, src: src, clk: clk, metrics: m}
	r.failed = func(ctx context.Context, _ error) {
		if !src.CatalogStatus().OnDemandAt.IsZero() {
			return // prices read earlier stay in use; the failure is counted and logged
		}
		m.OnDemandFromSnapshot.Set(1)
		var classes awsv1.EC2NodeClassList
		if kube.List(ctx, &classes) != nil {
			return
		}
		for i := range classes.Items {
			rec.Publish(events.Warning(&classes.Items[i], ReasonOnDemandSnapshot, "PriceRefresh", onDemandFallbackMessage))
		}
	}
	return r
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Intervals are the refresh periods; zero takes the default.
type Intervals struct {
	Spot    time.Duration
	Catalog time.Duration
}

// Provider is what the catalog singletons need of the AWS provider.
type Provider interface {
	Refresher
	garbagecollection.TemplateCollector
}

// Singletons are the live catalog's loops — spot prices, on-demand prices,
// offerings per zone — and the launch-template collector, built once for
// cmd/controller and the simulator alike.
func Singletons(p Provider, kube client.Reader, rec *events.Recorder, clk clock.Clock, m *Metrics, iv Intervals) []operator.Singleton {
	return []operator.Singleton{
		NewSpotPrices(p, clk, m, iv.Spot),
		NewOnDemandPrices(p, kube, rec, clk, m, iv.Catalog),
		NewOfferings(p, clk, m, iv.Catalog),
		garbagecollection.NewLaunchTemplates(p, 0),
	}
}
