package podevents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/operator"
)

// Dedupe is the least time between two stamps of one claim: a node whose
// pods churn every second is written at most this often, and its
// lastPodEventTime is never more than this old.
const Dedupe = 5 * time.Second

// Controller stamps pod events on NodeClaims.
type Controller struct {
	kube client.Client
	clk  clock.Clock
}

// New builds the controller; kube reads from the cache with the
// pkg/controllers/state field indexes.
func New(kube client.Client, clk clock.Clock) *Controller {
	return &Controller{kube: kube, clk: clk}
}

// Declaration is the controller for pkg/operator: registered NodeClaims,
// and pods mapped to the claim of the node they are bound to.
func (c *Controller) Declaration() operator.Controller {
	return operator.Controller{
		Name: "nodeclaim.podevents",
		For:  &nsv1.NodeClaim{},
		ForPredicate: func(o client.Object) bool {
			claim := o.(*nsv1.NodeClaim)
			return claim.Status.NodeName != "" && claim.DeletionTimestamp.IsZero()
		},
		Watches: []operator.Watch{{
			Object:    &corev1.Pod{},
			Predicate: func(o client.Object) bool { return o.(*corev1.Pod).Spec.NodeName != "" },
			Map:       c.claimForPod,
		}},
		Workers:    4,
		Reconciler: c,
	}
}

func (c *Controller) claimForPod(ctx context.Context, o client.Object) []reconcile.Request {
	// Only the name is read: no copy of the claim for every pod event.
	claim, err := state.ClaimByNodeName(ctx, c.kube, o.(*corev1.Pod).Spec.NodeName, client.UnsafeDisableDeepCopy)
	if err != nil || claim == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: claim.Name}}}
}

// Reconcile compares the node's workload pods with the fingerprint on the
// claim and, when they differ, stamps now as the last pod event (status
// first, so a crash in between stamps again rather than losing the event).
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &nsv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if claim.Status.NodeName == "" || !claim.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	prev, seen := claim.Annotations[nsv1.AnnotationPodSet]
	now := c.clk.Now()
	// Every bind on the node reconciles its claim. A claim seen before is
	// stamped on any change of its pod set, so within Dedupe of its last
	// stamp there is nothing to write whatever the pods are: wait for the
	// window before listing them (in a 1,000-pod scale-up, listing and
	// copying a node's pods on each of its binds was a fifth of the
	// controller's CPU). The pods are only fingerprinted, so they are read
	// without a deep copy.
	if last := claim.Status.LastPodEventTime.Time; seen && !last.IsZero() && now.Sub(last) < Dedupe && !now.Before(last) {
		return reconcile.Result{RequeueAfter: Dedupe - now.Sub(last)}, nil
	}
	pods, err := state.PodsOnNode(ctx, c.kube, claim.Status.NodeName, client.UnsafeDisableDeepCopy)
	if err != nil {
		return reconcile.Result{}, err
	}
	fp, n := Fingerprint(pods)
	if seen && prev == fp {
		return reconcile.Result{}, nil
	}
	// A claim seen for the first time with no workload had no pod event;
	// one seen busy (e.g. after an upgrade) is stamped now, which can only
	// delay consolidation, never hasten it.
	stamp := seen || n > 0
	if stamp {
		if last := claim.Status.LastPodEventTime.Time; !last.IsZero() && now.Sub(last) < Dedupe && !now.Before(last) {
			return reconcile.Result{RequeueAfter: Dedupe - now.Sub(last)}, nil
		}
		base := claim.DeepCopy()
		claim.Status.LastPodEventTime = metav1.NewTime(now)
		if err := statuspatch.Patch(ctx, c.kube, base, claim); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("stamping the last pod event of nodeclaim %s: %w", claim.Name, err))
		}
	}
	base := claim.DeepCopy()
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[nsv1.AnnotationPodSet] = fp
	if err := c.kube.Patch(ctx, claim, client.MergeFrom(base)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("recording the pod set of nodeclaim %s: %w", claim.Name, err))
	}
	return reconcile.Result{}, nil
}

// Fingerprint is a short hash of the workload pods on a node (bound, not
// DaemonSet or static, not finished or terminating) and how many there are.
func Fingerprint(pods []*corev1.Pod) (string, int) {
	var uids []string
	for _, p := range pods {
		if lifecycle.IsDaemonSetPod(p) || lifecycle.IsOwnedByNode(p) || lifecycle.IsTerminal(p) || p.DeletionTimestamp != nil {
			continue
		}
		uids = append(uids, string(p.UID))
	}
	sort.Strings(uids)
	h := sha256.New()
	for _, u := range uids {
		h.Write([]byte(u))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), len(uids)
}
