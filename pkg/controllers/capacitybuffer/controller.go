package capacitybuffer

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/operator"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// resync is how often a buffer is resolved again without a change: an
// auto buffer's arrivals age out of the hour, and the provisioner is asked
// to look at the buffer's room again.
const resync = 30 * time.Second

// Controller resolves CapacityBuffers into virtual pods.
type Controller struct {
	kube    client.Client
	cluster *state.Cluster
	clk     clock.Clock
	// trigger asks the provisioner for a cycle (provisioner.Trigger).
	trigger func(key string)

	mu sync.Mutex
	// arrivals are the creation times of the pods each buffer is for, by
	// pod, over the last hour: pods that came and went still count.
	arrivals map[string]map[types.UID]time.Time
}

// New builds the controller.
func New(kube client.Client, cluster *state.Cluster, clk clock.Clock, trigger func(string)) *Controller {
	return &Controller{kube: kube, cluster: cluster, clk: clk, trigger: trigger, arrivals: map[string]map[types.UID]time.Time{}}
}

// Controller declares it: CapacityBuffers, woken by the pods, PodTemplates
// and workloads of their namespace.
func (c *Controller) Controller() operator.Controller {
	return operator.Controller{
		Name: "capacitybuffer",
		For:  &cbv1.CapacityBuffer{},
		Watches: []operator.Watch{
			{Object: &corev1.Pod{}, Map: c.buffersIn},
			{Object: &corev1.PodTemplate{}, Map: c.buffersIn},
			{Object: &appsv1.Deployment{}, Map: c.buffersIn},
		},
		Reconciler: c,
	}
}

func (c *Controller) buffersIn(ctx context.Context, o client.Object) []reconcile.Request {
	var list cbv1.CapacityBufferList
	if err := c.kube.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, b := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
	}
	return out
}

// Reconcile resolves one buffer (provisioning.ResolveBuffer), hands its
// virtual pods to the cluster state, writes its status and asks the
// provisioner to keep its room.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := req.Namespace + "/" + req.Name
	b := &cbv1.CapacityBuffer{}
	if err := c.kube.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(key)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !b.DeletionTimestamp.IsZero() {
		c.forget(key)
		return reconcile.Result{}, nil
	}
	src, selector, err := c.source(ctx, b)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := c.clk.Now()
	if b.Annotations[cbv1.AnnotationSizing] == cbv1.SizingAuto && selector != nil {
		if src.Arrivals, err = c.observe(ctx, key, b.Namespace, selector, now); err != nil {
			return reconcile.Result{}, err
		}
	}
	res := provisioning.ResolveBuffer(b, src, now)
	c.cluster.SetBufferPods(key, res.Pods)
	if err := c.writeStatus(ctx, b, src, res); err != nil {
		return reconcile.Result{}, err
	}
	if len(res.Pods) > 0 {
		c.trigger("capacitybuffer/" + key)
	}
	return reconcile.Result{RequeueAfter: resync}, nil
}

func (c *Controller) forget(key string) {
	c.cluster.SetBufferPods(key, nil)
	c.mu.Lock()
	delete(c.arrivals, key)
	c.mu.Unlock()
}

// source reads the chunk's template: the PodTemplate, or the workload's
// pod template and replicas. It also returns the selector of the pods the
// buffer is for (auto sizing counts their arrivals).
func (c *Controller) source(ctx context.Context, b *cbv1.CapacityBuffer) (provisioning.BufferSource, labels.Selector, error) {
	var src provisioning.BufferSource
	if ref := b.Spec.PodTemplateRef; ref != nil {
		pt := &corev1.PodTemplate{}
		if err := c.kube.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: ref.Name}, pt); err != nil {
			if apierrors.IsNotFound(err) {
				src.Problem = fmt.Sprintf("PodTemplate %s/%s does not exist", b.Namespace, ref.Name)
				return src, nil, nil
			}
			return src, nil, fmt.Errorf("getting podtemplate %s/%s: %w", b.Namespace, ref.Name, err)
		}
		src.Template, src.Generation = &pt.Template, ptr.To(pt.Generation)
		return src, labels.SelectorFromSet(pt.Template.Labels), nil
	}
	ref := b.Spec.ScalableRef
	if ref == nil {
		src.Problem = "neither podTemplateRef nor scalableRef is set"
		return src, nil, nil
	}
	nn := types.NamespacedName{Namespace: b.Namespace, Name: ref.Name}
	var (
		obj      client.Object
		tmpl     func() (*corev1.PodTemplateSpec, *int32, *metav1.LabelSelector)
		supports = true
	)
	switch {
	case ref.APIGroup == "apps" && ref.Kind == "Deployment":
		d := &appsv1.Deployment{}
		obj, tmpl = d, func() (*corev1.PodTemplateSpec, *int32, *metav1.LabelSelector) {
			return &d.Spec.Template, d.Spec.Replicas, d.Spec.Selector
		}
	case ref.APIGroup == "apps" && ref.Kind == "ReplicaSet":
		r := &appsv1.ReplicaSet{}
		obj, tmpl = r, func() (*corev1.PodTemplateSpec, *int32, *metav1.LabelSelector) {
			return &r.Spec.Template, r.Spec.Replicas, r.Spec.Selector
		}
	case ref.APIGroup == "apps" && ref.Kind == "StatefulSet":
		s := &appsv1.StatefulSet{}
		obj, tmpl = s, func() (*corev1.PodTemplateSpec, *int32, *metav1.LabelSelector) {
			return &s.Spec.Template, s.Spec.Replicas, s.Spec.Selector
		}
	case ref.APIGroup == "batch" && ref.Kind == "Job":
		j := &batchv1.Job{}
		obj, tmpl = j, func() (*corev1.PodTemplateSpec, *int32, *metav1.LabelSelector) {
			return &j.Spec.Template, j.Spec.Parallelism, j.Spec.Selector
		}
	default:
		supports = false
	}
	if !supports {
		src.Problem = fmt.Sprintf("scalableRef %s %q of group %q: Nodesmith reads Deployments, ReplicaSets and StatefulSets (apps) and Jobs (batch)",
			ref.Kind, ref.Name, ref.APIGroup)
		return src, nil, nil
	}
	if err := c.kube.Get(ctx, nn, obj); err != nil {
		if apierrors.IsNotFound(err) {
			src.Problem = fmt.Sprintf("%s %s/%s does not exist", ref.Kind, b.Namespace, ref.Name)
			return src, nil, nil
		}
		return src, nil, fmt.Errorf("getting %s %s: %w", ref.Kind, nn, err)
	}
	t, replicas, sel := tmpl()
	src.Template = t
	src.ScalableReplicas = ptr.To(ptr.Deref(replicas, 1))
	selector := labels.SelectorFromSet(t.Labels)
	if sel != nil {
		if s, err := metav1.LabelSelectorAsSelector(sel); err == nil {
			selector = s
		}
	}
	return src, selector, nil
}

// observe records the creation of the buffer's pods and returns those of
// the last hour.
func (c *Controller) observe(ctx context.Context, key, ns string, selector labels.Selector, now time.Time) ([]time.Time, error) {
	var pods corev1.PodList
	if err := c.kube.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("listing the pods of capacity buffer %s: %w", key, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.arrivals[key]
	if seen == nil {
		seen = map[types.UID]time.Time{}
		c.arrivals[key] = seen
	}
	for _, p := range pods.Items {
		seen[p.UID] = p.CreationTimestamp.Time
	}
	out := make([]time.Time, 0, len(seen))
	for uid, at := range seen {
		if now.Sub(at) > provisioning.AutoHistory {
			delete(seen, uid)
			continue
		}
		out = append(out, at)
	}
	return out, nil
}

// writeStatus writes the buffer's resolution; ReadyForProvisioning alone
// among the conditions (statuspatch keeps the others').
func (c *Controller) writeStatus(ctx context.Context, b *cbv1.CapacityBuffer, src provisioning.BufferSource, res provisioning.BufferResolution) error {
	base := b.DeepCopy()
	b.Status.Replicas = ptr.To(res.Replicas)
	b.Status.PodTemplateRef = b.Spec.PodTemplateRef
	b.Status.PodTemplateGeneration = src.Generation
	strategy := cbv1.ActiveCapacity
	if s := b.Spec.ProvisioningStrategy; s != nil {
		strategy = *s
	}
	b.Status.ProvisioningStrategy = &strategy
	lifecycle.SetCondition(&b.Status.Conditions, res.Ready, b.Generation, metav1.NewTime(c.clk.Now()))
	if equality.Semantic.DeepEqual(base.Status, b.Status) {
		return nil
	}
	if err := statuspatch.Patch(ctx, c.kube, base, b); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching capacitybuffer %s/%s status: %w", b.Namespace, b.Name, err))
	}
	return nil
}
