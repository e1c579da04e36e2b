package costmetrics

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/cost"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
)

// DefaultInterval is how often the cost metrics are recomputed: prices
// change at launch and termination, and a scrape every 30 s or more sees
// each change within one interval.
const DefaultInterval = 30 * time.Second

// Controller recomputes the cost gauges from the cluster every interval.
type Controller struct {
	cluster  *state.Cluster
	metrics  *metrics.Metrics
	interval time.Duration
	// series are the label sets exported last step, so the ones that
	// disappear (a type no longer running) are deleted, not left stale.
	series     map[[3]string]bool
	namespaces map[string]bool
	// exported is the Version of the snapshot last exported: the fleet's
	// cost and its split are functions of the snapshot alone (prices are
	// on the claims), so an unchanged cluster is not split again.
	exported    uint64
	hasExported bool
}

var _ operator.Singleton = (*Controller)(nil)

// New builds the controller; interval <= 0 means DefaultInterval.
func New(cluster *state.Cluster, m *metrics.Metrics, interval time.Duration) *Controller {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Controller{cluster: cluster, metrics: m, interval: interval, series: map[[3]string]bool{}, namespaces: map[string]bool{}}
}

// Name of the singleton.
func (c *Controller) Name() string { return "cost" }

// Reconcile exports one snapshot's costs.
func (c *Controller) Reconcile(ctx context.Context) (reconcile.Result, error) {
	snap, err := c.cluster.Snapshot(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if v, ok := snap.Version(); ok {
		if c.hasExported && v == c.exported {
			return reconcile.Result{RequeueAfter: c.interval}, nil
		}
		defer func() { c.exported, c.hasExported = v, true }()
	}
	fleet, shares := cost.Fleet(snap)
	c.export(fleet, shares)
	return reconcile.Result{RequeueAfter: c.interval}, nil
}

func (c *Controller) export(fleet cost.Breakdown, shares cost.Shares) {
	seen := map[[3]string]bool{}
	for _, l := range fleet.Lines {
		k := [3]string{l.NodePool, l.CapacityType, l.InstanceType}
		seen[k] = true
		c.metrics.CostPerHour.WithLabelValues(k[0], k[1], k[2]).Set(l.PerHour)
	}
	for k := range c.series {
		if !seen[k] {
			c.metrics.CostPerHour.DeleteLabelValues(k[0], k[1], k[2])
		}
	}
	c.series = seen
	nss := map[string]bool{}
	for ns, v := range shares.ByNamespace {
		nss[ns] = true
		c.metrics.CostNamespace.WithLabelValues(ns).Set(v)
	}
	for ns := range c.namespaces {
		if !nss[ns] {
			c.metrics.CostNamespace.DeleteLabelValues(ns)
		}
	}
	c.namespaces = nss
	c.metrics.CostIdle.Set(shares.Idle)
}
