package karpenter

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/convert"
	"github.com/nodesmith/nodesmith/pkg/operator"
)

// Interval is how often Karpenter's NodePools are read again by default.
const Interval = 5 * time.Minute

// ReasonHasRoom is the Warning Event on a Karpenter NodePool that may
// still launch nodes.
const ReasonHasRoom = "KarpenterNodePoolHasRoom"

// errHasRoom is what the log line carries at error level.
var errHasRoom = errors.New("Karpenter NodePools still have room: Karpenter and Nodesmith would both launch nodes for the same pending pods")

// versions are Karpenter's NodePool API versions, newest first.
var versions = []string{"v1", "v1beta1"}

// Coexistence is the singleton; see the package doc.
type Coexistence struct {
	kube   client.Reader
	rec    *events.Recorder
	gauge  prometheus.Gauge
	log    logr.Logger
	repeat time.Duration
}

var _ operator.Singleton = (*Coexistence)(nil)

// New reads through kube (use the manager's API reader: no informer for a
// CRD that may not exist) every interval, publishes through rec and sets
// gauge.
func New(kube client.Reader, rec *events.Recorder, gauge prometheus.Gauge, log logr.Logger, every time.Duration) *Coexistence {
	return &Coexistence{kube: kube, rec: rec, gauge: gauge, log: log, repeat: every}
}

// NewGauge registers nodesmith_karpenter_nodepools_with_room with reg (an
// existing one is reused).
func NewGauge(reg prometheus.Registerer) (prometheus.Gauge, error) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "nodesmith", Subsystem: "karpenter", Name: "nodepools_with_room",
		Help: "Karpenter NodePools in this cluster that may still launch nodes (limits not at zero); above 0, both provisioners act on the same pending pods."})
	if err := reg.Register(g); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(prometheus.Gauge); ok {
				return existing, nil
			}
		}
		return nil, err
	}
	return g, nil
}

func (c *Coexistence) Name() string { return "karpenter.coexistence" }

// Reconcile reads Karpenter's NodePools once.
func (c *Coexistence) Reconcile(ctx context.Context) (reconcile.Result, error) {
	pools, err := c.list(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	var roomy []string
	for i := range pools {
		p := &pools[i]
		room, why := Room(p)
		if !room {
			continue
		}
		roomy = append(roomy, p.GetName())
		c.rec.Publish(events.Warning(p, ReasonHasRoom, "Coexistence", fmt.Sprintf(
			"Karpenter NodePool %s may still launch nodes (%s): Karpenter and Nodesmith would both launch for the same pending pods; set its spec.limits to cpu: 0 before Nodesmith's NodePools take over (docs/migrate-from-karpenter.md)",
			p.GetName(), why)))
	}
	sort.Strings(roomy)
	c.gauge.Set(float64(len(roomy)))
	if len(roomy) > 0 {
		c.log.Error(errHasRoom, "set their limits to cpu: 0 before Nodesmith's NodePools take over (docs/migrate-from-karpenter.md)",
			"karpenterNodePools", strings.Join(roomy, ","))
	}
	return reconcile.Result{RequeueAfter: c.repeat}, nil
}

// list returns Karpenter's NodePools of the newest version served; none
// when Karpenter's CRDs are not installed.
func (c *Coexistence) list(ctx context.Context) ([]unstructured.Unstructured, error) {
	for _, v := range versions {
		var list unstructured.UnstructuredList
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "karpenter.sh", Version: v, Kind: "NodePoolList"})
		err := c.kube.List(ctx, &list)
		switch {
		case err == nil:
			return list.Items, nil
		case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
			continue
		default:
			return nil, fmt.Errorf("listing Karpenter's NodePools (karpenter.sh/%s): %w", v, err)
		}
	}
	return nil, nil
}

// Room reads a Karpenter NodePool's spec.limits and status.resources and
// asks convert.KarpenterPoolRoom; a pool whose limits cannot be read has
// room (the check then errs on the loud side).
func Room(p *unstructured.Unstructured) (bool, string) {
	limits, err := resources(p, "spec", "limits")
	if err != nil {
		return true, "spec.limits unreadable: " + err.Error()
	}
	used, err := resources(p, "status", "resources")
	if err != nil {
		used = nil
	}
	return convert.KarpenterPoolRoom(limits, used)
}

func resources(p *unstructured.Unstructured, path ...string) (corev1.ResourceList, error) {
	m, found, err := unstructured.NestedMap(p.Object, path...)
	if err != nil || !found {
		return nil, err
	}
	rl := corev1.ResourceList{}
	for name, v := range m {
		q, err := resource.ParseQuantity(fmt.Sprint(v))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rl[corev1.ResourceName(name)] = q
	}
	return rl, nil
}
