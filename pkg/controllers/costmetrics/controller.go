package costmetrics

import (
	"context"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/cost"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// DefaultInterval is how often the cost metrics are recomputed: prices
// change at launch and termination, and a scrape every 30 s or more sees
// each change within one interval.
const DefaultInterval = 30 * time.Second

// Controller recomputes the cost gauges from the cluster every interval.
// A node costs what `nodesmith plan` and the disruption planner say it
// does (cost.Prices): its offering's price in its pool's instance types as
// the cloud returns them — every controller's cloud carries the
// NodeOverlays (cloudprovider/overlay) — else its launch price, and covered
// on-demand what the commitments leave uncovered.
type Controller struct {
	cluster  *state.Cluster
	cloud    cloudprovider.CloudProvider
	metrics  *metrics.Metrics
	interval time.Duration
	// series are the label sets exported last step, so the ones that
	// disappear (a type no longer running) are deleted, not left stale.
	series     map[[3]string]bool
	namespaces map[string]bool
	// exported is the Version of the snapshot last exported, and prices
	// the claims' prices then: the fleet's cost and its split are functions
	// of the snapshot and the prices, so an unchanged cluster at unchanged
	// prices is not split again.
	exported    uint64
	hasExported bool
	prices      []cost.Priced
}

var _ operator.Singleton = (*Controller)(nil)

// New builds the controller; interval <= 0 means DefaultInterval. cloud
// gives each pool's instance types; nil prices every node at its launch
// price.
func New(cluster *state.Cluster, cloud cloudprovider.CloudProvider, m *metrics.Metrics, interval time.Duration) *Controller {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Controller{cluster: cluster, cloud: cloud, metrics: m, interval: interval, series: map[[3]string]bool{}, namespaces: map[string]bool{}}
}

// Name of the singleton.
func (c *Controller) Name() string { return "cost" }

// Reconcile exports one snapshot's costs.
func (c *Controller) Reconcile(ctx context.Context) (reconcile.Result, error) {
	snap, err := c.cluster.Snapshot(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	live := cost.Live(snap.NodeClaims)
	prices := cost.Prices(live, cost.PoolTypes(c.poolTypes(ctx, snap)), snap.Commitments)
	if v, ok := snap.Version(); ok {
		if c.hasExported && v == c.exported && slices.Equal(prices, c.prices) {
			return reconcile.Result{RequeueAfter: c.interval}, nil
		}
		defer func() { c.exported, c.hasExported, c.prices = v, true, prices }()
	}
	fleet, shares := cost.FleetPriced(snap, live, prices)
	c.export(fleet, shares)
	return reconcile.Result{RequeueAfter: c.interval}, nil
}

// poolTypes are the instance types of the snapshot's pools, as the cloud
// returns them; a pool the cloud cannot give types for (its node class not
// ready) is left out, and its nodes are priced at their launch price.
func (c *Controller) poolTypes(ctx context.Context, snap *provisioning.Snapshot) map[string][]*catalog.InstanceType {
	out := map[string][]*catalog.InstanceType{}
	if c.cloud == nil {
		return out
	}
	for _, np := range snap.NodePools {
		its, err := c.cloud.GetInstanceTypes(ctx, np)
		if err != nil {
			log.FromContext(ctx).V(1).Info("pricing the pool's nodes at their launch price", "nodepool", np.Name, "error", err.Error())
			continue
		}
		out[np.Name] = its
	}
	return out
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
