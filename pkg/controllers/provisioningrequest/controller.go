package provisioningrequest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	prv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// InstanceTypes is the cloud's view of what a pool can launch
// (cloudprovider.CloudProvider satisfies it).
type InstanceTypes interface {
	GetInstanceTypes(ctx context.Context, pool *nsv1.NodePool) ([]*catalog.InstanceType, error)
}

// DetailNodes is the status detail listing the existing nodes an atomic
// request's pods fit on (comma-separated): booked with its claims.
const DetailNodes = "nodesmith.sh/nodes"

// launchCheck is how often an atomic request's launch is looked at again
// besides its claims' own changes.
const launchCheck = 10 * time.Second

// expectWrite is how long a claim this controller created may be missing
// from the cache before it counts as gone.
const expectWrite = time.Minute

// Options tune the controller.
type Options struct {
	// NewName names a pool's next NodeClaim (default the pool's name and a
	// random suffix).
	NewName func(pool string) string
	// Solve tunes the solver.
	Solve scheduling.Options
}

// Controller serves ProvisioningRequests.
type Controller struct {
	kube     client.Client
	cluster  *state.Cluster
	types    InstanceTypes
	clk      clock.Clock
	recorder *events.Recorder
	metrics  *metrics.Metrics
	opts     Options

	mu sync.Mutex
	// created are the claims this controller created and the cache has
	// not shown yet, with when.
	created map[string]time.Time
	// planned are the claims of the atomic requests this controller
	// planned, by request: the cache may not show the status holding them
	// yet, and planning again would launch a second set.
	planned map[string][]string
	// tries counts, by request, the tries in a row whose pods did not
	// fit (for provisioning.RetryDelay).
	tries map[string]int
}

// New builds the controller.
func New(kube client.Client, cluster *state.Cluster, its InstanceTypes, clk clock.Clock, rec *events.Recorder, m *metrics.Metrics, opts Options) *Controller {
	if opts.NewName == nil {
		opts.NewName = func(pool string) string { return pool + "-" + utilrand.String(5) }
	}
	opts.Solve = provisioning.SolveOptions(opts.Solve)
	return &Controller{kube: kube, cluster: cluster, types: its, clk: clk, recorder: rec, metrics: m, opts: opts, created: map[string]time.Time{}, planned: map[string][]string{}, tries: map[string]int{}}
}

// Controller declares it: ProvisioningRequests, woken by their NodeClaims.
func (c *Controller) Controller() operator.Controller {
	return operator.Controller{
		Name: "provisioningrequest",
		For:  &prv1.ProvisioningRequest{},
		Watches: []operator.Watch{
			{Object: &nsv1.NodeClaim{}, Map: func(_ context.Context, o client.Object) []reconcile.Request {
				ns, name, ok := strings.Cut(o.GetAnnotations()[provisioning.AnnotationRequestPod], "/")
				if !ok {
					return nil
				}
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
			}},
		},
		Reconciler: c,
	}
}

// Reconcile serves one request.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := req.Namespace + "/" + req.Name
	pr := &prv1.ProvisioningRequest{}
	if err := c.kube.Get(ctx, req.NamespacedName, pr); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(key)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	accepted, serve := provisioning.AcceptRequest(pr)
	conds := pr.Status.Conditions
	if !serve || !pr.DeletionTimestamp.IsZero() ||
		lifecycle.IsTrue(conds, prv1.ConditionFailed) || lifecycle.IsTrue(conds, prv1.ConditionBookingExpired) {
		c.forget(key)
		return reconcile.Result{}, nil
	}
	base := pr.DeepCopy()
	c.set(pr, accepted)
	var (
		res reconcile.Result
		err error
	)
	switch {
	case lifecycle.IsTrue(conds, prv1.ConditionProvisioned):
		res, err = c.booked(ctx, key, pr)
	case pr.Spec.ProvisioningClassName == prv1.ClassCheckCapacity:
		res, err = c.checkCapacity(ctx, key, pr)
	default:
		res, err = c.atomic(ctx, key, pr, base)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	return res, c.write(ctx, base, pr)
}

// forget drops what is kept for a request that is done or gone.
func (c *Controller) forget(key string) {
	c.cluster.Book(key, nil, time.Time{})
	c.mu.Lock()
	delete(c.planned, key)
	delete(c.tries, key)
	c.mu.Unlock()
}

// retryIfNotFit: when the verdict is Retry (the pods did not fit), notes
// one more try of the request and says when to try again (again true);
// otherwise forgets the request's misses. The first miss is announced as
// an event.
func (c *Controller) retryIfNotFit(key string, pr *prv1.ProvisioningRequest, v provisioning.RequestVerdict) (reconcile.Result, bool) {
	if !v.Retry {
		c.mu.Lock()
		delete(c.tries, key)
		c.mu.Unlock()
		return reconcile.Result{}, false
	}
	c.apply(pr, v)
	c.mu.Lock()
	c.tries[key]++
	n := c.tries[key]
	c.mu.Unlock()
	if n == 1 {
		c.recorder.Publish(events.Warning(pr, v.Provisioned.Reason, "ProvisioningRequest", v.Provisioned.Message))
	}
	return reconcile.Result{RequeueAfter: provisioning.RetryDelay(n)}, true
}

func (c *Controller) set(pr *prv1.ProvisioningRequest, cond metav1.Condition) {
	lifecycle.SetCondition(&pr.Status.Conditions, cond, pr.Generation, metav1.NewTime(c.clk.Now()))
}

// apply writes a verdict's conditions and announces an outcome.
func (c *Controller) apply(pr *prv1.ProvisioningRequest, v provisioning.RequestVerdict) {
	c.set(pr, v.Provisioned)
	switch {
	case v.Failed != nil:
		c.set(pr, *v.Failed)
		c.recorder.Publish(events.Warning(pr, v.Failed.Reason, "ProvisioningRequest", v.Failed.Message))
	case v.Provisioned.Status == metav1.ConditionTrue:
		c.recorder.Publish(events.Normal(pr, prv1.ConditionProvisioned, "ProvisioningRequest", v.Provisioned.Message))
	}
}

func (c *Controller) write(ctx context.Context, base, pr *prv1.ProvisioningRequest) error {
	if equality.Semantic.DeepEqual(base.Status, pr.Status) {
		return nil
	}
	if err := statuspatch.Patch(ctx, c.kube, base, pr); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching provisioningrequest %s/%s status: %w", pr.Namespace, pr.Name, err))
	}
	return nil
}

// podsAndSnapshot is the request's pods and the cluster to place them
// in; no snapshot (and no error) when a template is missing, and then the
// request is failed (PodTemplateNotFound).
func (c *Controller) podsAndSnapshot(ctx context.Context, pr *prv1.ProvisioningRequest) ([]*corev1.Pod, *provisioning.Snapshot, error) {
	pods, problem, err := c.pods(ctx, pr)
	if err != nil {
		return nil, nil, err
	}
	if problem != "" {
		c.apply(pr, provisioning.TemplateMissing(problem))
		return nil, nil, nil
	}
	snap, err := c.cluster.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	return pods, snap, nil
}

// pods reads the request's PodTemplates and makes its pods; the problem
// says which template is missing.
func (c *Controller) pods(ctx context.Context, pr *prv1.ProvisioningRequest) ([]*corev1.Pod, string, error) {
	tmpls := map[string]*corev1.PodTemplateSpec{}
	for _, set := range pr.Spec.PodSets {
		pt := &corev1.PodTemplate{}
		err := c.kube.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: set.PodTemplateRef.Name}, pt)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, "", fmt.Errorf("getting podtemplate %s/%s: %w", pr.Namespace, set.PodTemplateRef.Name, err)
		}
		tmpls[pt.Name] = &pt.Template
	}
	pods, problem := provisioning.RequestPods(pr, tmpls)
	return pods, problem, nil
}

// checkCapacity answers a check-capacity request: Provisioned (its nodes
// booked), not yet (tried again later), or Failed (no template).
func (c *Controller) checkCapacity(ctx context.Context, key string, pr *prv1.ProvisioningRequest) (reconcile.Result, error) {
	pods, snap, err := c.podsAndSnapshot(ctx, pr)
	if err != nil || snap == nil {
		return reconcile.Result{}, err
	}
	held := provisioning.PendingPods(snap, c.cluster.Nominated, c.clk.Now()).Held
	in := scheduling.Input{Nodes: provisioning.ExistingNodes(snap, held), DaemonSets: snap.DaemonSets, Options: c.opts.Solve}
	v, err := provisioning.CheckCapacity(in, pods)
	if err != nil {
		return reconcile.Result{}, err
	}
	if res, again := c.retryIfNotFit(key, pr, v); again {
		return res, nil
	}
	nodes := targets(v.Plan, nil)
	setDetail(pr, DetailNodes, nodes)
	c.cluster.Book(key, nodes, c.clk.Now().Add(provisioning.BookingWindow))
	c.apply(pr, v)
	return reconcile.Result{}, nil
}

// targets are the nodes a plan nominated pods to, and the claims, sorted.
func targets(plan *scheduling.Plan, claims []string) []string {
	seen := map[string]bool{}
	var out []string
	if plan != nil {
		for _, n := range plan.Nominations {
			if !seen[n.Node] {
				seen[n.Node] = true
				out = append(out, n.Node)
			}
		}
	}
	sort.Strings(out)
	return append(out, claims...)
}

func setDetail(pr *prv1.ProvisioningRequest, key string, names []string) {
	if pr.Status.ProvisioningClassDetails == nil {
		pr.Status.ProvisioningClassDetails = map[string]prv1.Detail{}
	}
	pr.Status.ProvisioningClassDetails[key] = prv1.Detail(strings.Join(names, ","))
}

func detail(pr *prv1.ProvisioningRequest, key string) []string {
	d := string(pr.Status.ProvisioningClassDetails[key])
	if d == "" {
		return nil
	}
	return strings.Split(d, ",")
}

// DetailConsumed is the status detail saying every pod of the request has
// been bound ("true"): the booking was released early.
const DetailConsumed = "nodesmith.sh/consumed"

// booked keeps a Provisioned request's nodes booked until the window runs
// out, then sets BookingExpired; once all the request's pods are bound
// (provisioning.Consumed) the room is theirs and the booking is released
// early. A booked claim that went away sets CapacityRevoked.
func (c *Controller) booked(ctx context.Context, key string, pr *prv1.ProvisioningRequest) (reconcile.Result, error) {
	since := meta.FindStatusCondition(pr.Status.Conditions, prv1.ConditionProvisioned).LastTransitionTime.Time
	now := c.clk.Now()
	if provisioning.BookingExpired(since, now) {
		c.cluster.Book(key, nil, time.Time{})
		c.set(pr, lifecycle.Condition(prv1.ConditionBookingExpired, true, "",
			fmt.Sprintf("the room was kept for the request's pods for %s", provisioning.BookingWindow)))
		return reconcile.Result{}, nil
	}
	until := since.Add(provisioning.BookingWindow)
	if pr.Status.ProvisioningClassDetails[DetailConsumed] == "true" {
		c.cluster.Book(key, nil, time.Time{})
		return reconcile.Result{RequeueAfter: until.Sub(now)}, nil
	}
	var pods corev1.PodList
	if err := c.kube.List(ctx, &pods, client.InNamespace(pr.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the pods of provisioningrequest %s: %w", key, err)
	}
	ptrs := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		ptrs[i] = &pods.Items[i]
	}
	if provisioning.Consumed(pr, ptrs) {
		c.cluster.Book(key, nil, time.Time{})
		setDetail(pr, DetailConsumed, []string{"true"})
		return reconcile.Result{RequeueAfter: until.Sub(now)}, nil
	}
	claims := detail(pr, prv1.DetailNodeClaims)
	c.cluster.Book(key, append(detail(pr, DetailNodes), claims...), until)
	for _, name := range claims {
		st, err := c.claim(ctx, name)
		if err != nil {
			return reconcile.Result{}, err
		}
		if st.Gone {
			c.set(pr, lifecycle.Condition(prv1.ConditionCapacityRevoked, true, "",
				fmt.Sprintf("nodeclaim %s went away within the booking window", name)))
			break
		}
	}
	// Woken by the request's claims, and at the window's end; pods being
	// bound are seen at the next of these or at launchCheck.
	return reconcile.Result{RequeueAfter: min(until.Sub(now), launchCheck)}, nil
}

// claim is how one of the request's claims stands; a claim created here
// that the cache has not shown yet is still launching, for expectWrite.
func (c *Controller) claim(ctx context.Context, name string) (provisioning.ClaimLaunch, error) {
	out := provisioning.ClaimLaunch{Name: name}
	nc := &nsv1.NodeClaim{}
	err := c.kube.Get(ctx, types.NamespacedName{Name: name}, nc)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case apierrors.IsNotFound(err):
		at, pending := c.created[name]
		out.Gone = !pending || c.clk.Since(at) > expectWrite
		if out.Gone {
			delete(c.created, name)
		}
		return out, nil
	case err != nil:
		return out, fmt.Errorf("getting nodeclaim %s: %w", name, err)
	}
	delete(c.created, name)
	out.Gone = !nc.DeletionTimestamp.IsZero()
	out.Launched = meta.FindStatusCondition(nc.Status.Conditions, nsv1.ConditionLaunched)
	return out, nil
}
