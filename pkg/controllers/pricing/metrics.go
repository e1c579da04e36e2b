package pricing

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Data names, the metrics' "data" label.
const (
	DataSpotPrices     = "spot_prices"
	DataOnDemandPrices = "on_demand_prices"
	DataOfferings      = "offerings"
)

// Metrics are the catalog refresh collectors.
type Metrics struct {
	// LastRefresh is the Unix time each part of the catalog was last read.
	LastRefresh *prometheus.GaugeVec
	// Failures counts failed refreshes per part.
	Failures *prometheus.CounterVec
	// OnDemandFromSnapshot is 1 while on-demand prices come from the
	// embedded snapshot because the Pricing API has not answered.
	OnDemandFromSnapshot prometheus.Gauge
}

// NewMetrics registers the collectors with reg (a registry that already
// has them is reused, so tests and restarts can call it twice).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		LastRefresh: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "nodesmith", Subsystem: "catalog", Name: "last_refresh_timestamp_seconds",
			Help: "Unix time the catalog part (spot_prices, on_demand_prices, offerings) was last read from AWS."}, []string{"data"}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nodesmith", Subsystem: "catalog", Name: "refresh_failures_total",
			Help: "Failed refreshes of a catalog part."}, []string{"data"}),
		OnDemandFromSnapshot: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "nodesmith", Subsystem: "catalog", Name: "on_demand_prices_from_snapshot",
			Help: "1 while on-demand prices come from the embedded snapshot because the Pricing API has not answered."}),
	}
	var err error
	m.LastRefresh = register(reg, m.LastRefresh, &err)
	m.Failures = register(reg, m.Failures, &err)
	m.OnDemandFromSnapshot = register(reg, m.OnDemandFromSnapshot, &err)
	return m, err
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		if *errp == nil {
			*errp = err
		}
	}
	return c
}
