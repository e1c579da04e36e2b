package provisioner

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// PodController triggers the batcher for provisionable pods.
type PodController struct {
	kube        client.Client
	cluster     *state.Cluster
	provisioner *Provisioner
}

// NewPodController builds the pod trigger.
func NewPodController(kube client.Client, cluster *state.Cluster, p *Provisioner) *PodController {
	return &PodController{kube: kube, cluster: cluster, provisioner: p}
}

// Controller declares the controller: pods.
func (c *PodController) Controller() operator.Controller {
	return operator.Controller{Name: "provisioning.pods", For: &corev1.Pod{}, Workers: 4, Reconciler: c}
}

// Reconcile triggers a batch for a provisionable pod that is not nominated.
func (c *PodController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	// Read only, on every pod event: the cache's own maps, not copies.
	if err := c.kube.Get(ctx, req.NamespacedName, pod, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := c.provisioner.clk.Now()
	if !lifecycle.Provisionable(pod, now) {
		if pod.Spec.NodeName != "" {
			c.cluster.Forget(pod.UID)
		}
		// A pod kube-scheduler has not judged yet is planned without its
		// verdict once it has waited long enough.
		if wait, ok := lifecycle.ProvisionableIn(pod, now); ok {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		return reconcile.Result{}, nil
	}
	// Nominated pods trigger too: the cycle decides whether their
	// nomination still holds (see Provisioner.pending), and a cycle with
	// nothing to plan is cheap. They do not hold the window open: while
	// their nodes boot, kube-scheduler re-marks them Unschedulable, and a
	// burst's hundreds of such updates would keep a new pod waiting for
	// the window's maximum instead of its idle time.
	if _, _, nominated := c.cluster.Nominated(pod.UID); nominated {
		c.provisioner.TriggerQuiet(string(pod.UID))
	} else {
		c.provisioner.Trigger(string(pod.UID))
	}
	return reconcile.Result{RequeueAfter: provisioning.DefaultRecheckInterval}, nil
}
