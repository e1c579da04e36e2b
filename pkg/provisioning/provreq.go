package provisioning

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	prv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// ProvisioningRequests (autoscaling.x-k8s.io/v1): room asked for pods that
// do not exist yet. These are the rules every caller shares: which
// requests Nodesmith serves (AcceptRequest), the request's pods
// (RequestPods), check-capacity's answer (CheckCapacity), the atomic
// scale-up's all-or-nothing plan (PlanAtomic), how its launch ends
// (AtomicLaunch) and when its booking runs out (BookingWindow).

// A request whose pods do not fit is not failed: like Cluster
// Autoscaler, Nodesmith says so in Provisioned (CapacityNotFound) and tries
// again, RetryFirst after the first try and twice as long after each
// further one, at most RetryMax apart, until the pods fit or the request
// is deleted. A pool created with the request, capacity freed by other
// pods or a raised limit is found on the next try.
const (
	RetryFirst = 10 * time.Second
	RetryMax   = 5 * time.Minute
)

// RetryDelay is how long to wait before try number tries+1 of a request
// that did not fit in tries tries (tries >= 1).
func RetryDelay(tries int) time.Duration {
	d := RetryFirst
	for i := 1; i < tries && d < RetryMax; i++ {
		d *= 2
	}
	return min(d, RetryMax)
}

// BookingWindow is how long a Provisioned request's room is kept for its
// pods, as Cluster Autoscaler keeps it: its nodes are not disrupted before.
const BookingWindow = 10 * time.Minute

// AnnotationRequestPod on a request's virtual pod names the request
// (namespace/name).
const AnnotationRequestPod = nsv1.Group + "/provisioning-request"

// The reasons of the Failed and Provisioned conditions Nodesmith writes.
const (
	ReasonNotFit          = "CapacityNotFound"
	ReasonTemplateMissing = "PodTemplateNotFound"
	ReasonLaunchFailed    = "LaunchFailed"
	ReasonLaunching       = "Launching"
	ReasonBookingExpired  = "BookingExpired"
)

// AcceptRequest says whether Nodesmith serves the request's class, with
// the Accepted condition when it does (false: the request is another
// provisioner's and is left alone).
func AcceptRequest(pr *prv1.ProvisioningRequest) (metav1.Condition, bool) {
	switch pr.Spec.ProvisioningClassName {
	case prv1.ClassCheckCapacity, prv1.ClassAtomicScaleUp:
	default:
		return metav1.Condition{}, false
	}
	msg := fmt.Sprintf("served by Nodesmith as %s", pr.Spec.ProvisioningClassName)
	if len(pr.Spec.Parameters) > 0 {
		keys := make([]string, 0, len(pr.Spec.Parameters))
		for k := range pr.Spec.Parameters {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		msg += fmt.Sprintf("; parameters %s are not read by Nodesmith", strings.Join(keys, ", "))
	}
	return lifecycle.Condition(prv1.ConditionAccepted, true, "", msg), true
}

// RequestPods are the request's pods: for each pod set, Count copies of
// its PodTemplate's pod in the request's namespace, marked with
// AnnotationRequestPod, Pending. templates are the PodTemplates by name;
// a missing one is the problem returned (and no pods).
func RequestPods(pr *prv1.ProvisioningRequest, templates map[string]*corev1.PodTemplateSpec) ([]*corev1.Pod, string) {
	var out []*corev1.Pod
	for s, set := range pr.Spec.PodSets {
		tmpl := templates[set.PodTemplateRef.Name]
		if tmpl == nil {
			return nil, fmt.Sprintf("PodTemplate %s/%s of pod set %d does not exist", pr.Namespace, set.PodTemplateRef.Name, s)
		}
		for i := range set.Count {
			p := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
			p.Namespace = pr.Namespace
			p.Name = fmt.Sprintf("provreq-%s-%d-%d", pr.Name, s, i)
			p.UID = types.UID(fmt.Sprintf("provisioningrequest/%s/%s/%d/%d", pr.Namespace, pr.Name, s, i))
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[AnnotationRequestPod] = pr.Namespace + "/" + pr.Name
			p.Status = corev1.PodStatus{Phase: corev1.PodPending}
			out = append(out, p)
		}
	}
	return out, ""
}

// RequestVerdict is what a request comes to.
type RequestVerdict struct {
	// Provisioned is the Provisioned condition.
	Provisioned metav1.Condition
	// Failed is the Failed condition when the request failed (final), nil
	// otherwise.
	Failed *metav1.Condition
	// Retry: the pods do not fit now; the request is tried again later
	// (RetryDelay). Provisioned says why; Failed is nil.
	Retry bool
	// Plan is where the pods go: for check-capacity the nodes they fit on
	// (nominations only), for an atomic request room on existing nodes for
	// some and new claims for the rest; nil when the request failed.
	Plan *scheduling.Plan
}

func failed(reason, msg string) RequestVerdict {
	f := metav1.Condition{Type: prv1.ConditionFailed, Status: metav1.ConditionTrue, Reason: reason, Message: msg}
	return RequestVerdict{Provisioned: lifecycle.Condition(prv1.ConditionProvisioned, false, reason, msg), Failed: &f}
}

// notFit is the verdict on a request whose pods do not fit now: not
// Provisioned, tried again.
func notFit(msg string) RequestVerdict {
	return RequestVerdict{Retry: true, Provisioned: lifecycle.Condition(prv1.ConditionProvisioned, false, ReasonNotFit,
		msg+"; Nodesmith will try again")}
}

// TemplateMissing is the verdict on a request whose templates cannot be
// read (RequestPods' problem).
func TemplateMissing(problem string) RequestVerdict { return failed(ReasonTemplateMissing, problem) }

// CheckCapacity is check-capacity's answer: do all the pods fit on the
// room there is now, the ready nodes (nodes marked for deletion and
// claims still in flight are not room yet), with the pods already there
// or nominated there. Nothing is launched, so the pools are not asked;
// the verdict's plan says which nodes the pods fit on (to book them).
// When they do not all fit the verdict is Retry.
func CheckCapacity(in scheduling.Input, pods []*corev1.Pod) (RequestVerdict, error) {
	now := in
	now.Pods, now.NodePools = pods, nil
	now.Nodes = make([]*scheduling.ExistingNode, 0, len(in.Nodes))
	for _, n := range in.Nodes {
		if !n.InFlight {
			now.Nodes = append(now.Nodes, n)
		}
	}
	plan, err := scheduling.Solve(now)
	if err != nil {
		return RequestVerdict{}, fmt.Errorf("solving %d pods of a check-capacity request: %w", len(pods), err)
	}
	if len(plan.Unschedulable) > 0 {
		return notFit(unplaced(plan, len(pods), "fit on the nodes there are now")), nil
	}
	return RequestVerdict{Plan: plan, Provisioned: lifecycle.Condition(prv1.ConditionProvisioned, true, "",
		fmt.Sprintf("all %d pods fit on the nodes there are now", len(pods)))}, nil
}

func unplaced(plan *scheduling.Plan, total int, where string) string {
	return fmt.Sprintf("%d of %d pods do not %s; first: %s %s", len(plan.Unschedulable), total, where,
		plan.Unschedulable[0].Pod.Name, plan.Unschedulable[0].Reason)
}

// PlanAtomic is best-effort-atomic-scale-up's plan: room for every pod,
// on the nodes and in-flight claims there are and on new claims from the
// pools, or nothing at all when even one pod cannot be placed (then the
// verdict is Retry).
func PlanAtomic(in scheduling.Input, pods []*corev1.Pod) (RequestVerdict, error) {
	in.Pods = pods
	plan, err := scheduling.Solve(in)
	if err != nil {
		return RequestVerdict{}, fmt.Errorf("solving %d pods of an atomic request: %w", len(pods), err)
	}
	if len(plan.Unschedulable) > 0 {
		return notFit(unplaced(plan, len(pods), "fit on the nodes there are or on any pool's new nodes") + "; nothing launched"), nil
	}
	return RequestVerdict{Plan: plan, Provisioned: lifecycle.Condition(prv1.ConditionProvisioned, false, ReasonLaunching,
		fmt.Sprintf("launching %d nodeclaims for %d pods (%d fit on existing room)", len(plan.NewClaims), len(pods), len(plan.Nominations)))}, nil
}

// ClaimLaunch is how one of an atomic request's claims stands.
type ClaimLaunch struct {
	Name string
	// Gone: the claim no longer exists (deleted, or never created).
	Gone bool
	// Launched is its Launched condition (nil until it has one).
	Launched *metav1.Condition
}

// AtomicLaunch is how an atomic request's launch ends: Provisioned once
// every claim launched; Failed, and the caller deletes them all, as soon
// as one failed to launch (Launched=False: rejected, or its class not
// ready) or went away (the launcher deletes a claim no offering had
// capacity for); still launching otherwise (Failed nil, Provisioned
// False), also while the cloud gave no answer (ReasonCloudUnavailable:
// the launch is retried).
func AtomicLaunch(claims []ClaimLaunch) RequestVerdict {
	waiting := 0
	for _, c := range claims {
		switch {
		case c.Gone:
			return failed(ReasonLaunchFailed, fmt.Sprintf("nodeclaim %s went away before it launched; all %d nodeclaims are rolled back", c.Name, len(claims)))
		case c.Launched == nil:
			waiting++
		case c.Launched.Status == metav1.ConditionFalse && c.Launched.Reason != lifecycle.ReasonCloudUnavailable:
			return failed(ReasonLaunchFailed, fmt.Sprintf("nodeclaim %s did not launch (%s: %s); all %d nodeclaims are rolled back",
				c.Name, c.Launched.Reason, c.Launched.Message, len(claims)))
		case c.Launched.Status != metav1.ConditionTrue:
			waiting++
		}
	}
	if waiting > 0 {
		return RequestVerdict{Provisioned: lifecycle.Condition(prv1.ConditionProvisioned, false, ReasonLaunching,
			fmt.Sprintf("%d of %d nodeclaims launched", len(claims)-waiting, len(claims)))}
	}
	return RequestVerdict{Provisioned: lifecycle.Condition(prv1.ConditionProvisioned, true, "",
		fmt.Sprintf("all %d nodeclaims launched; booked for the request's pods for %s", len(claims), BookingWindow))}
}

// Consumed reports whether a request's pods have all been bound: pods
// are the namespace's pods naming the request in
// prv1.AnnotationConsumeRequest, total the pods it asked for. From then
// on its room is theirs and needs no booking.
func Consumed(pr *prv1.ProvisioningRequest, pods []*corev1.Pod) bool {
	total := int32(0)
	for _, set := range pr.Spec.PodSets {
		total += set.Count
	}
	bound := int32(0)
	for _, p := range pods {
		if p.Annotations[prv1.AnnotationConsumeRequest] == pr.Name && p.Namespace == pr.Namespace && p.Spec.NodeName != "" {
			bound++
		}
	}
	return bound >= total
}

// BookingExpired reports whether a request Provisioned at since has had
// its room kept for the booking window.
func BookingExpired(since, now time.Time) bool { return !now.Before(since.Add(BookingWindow)) }

// WaitingForBooking splits pods into those the provisioner plans and those
// that wait for the room a ProvisioningRequest booked for them: a pod
// annotated prv1.AnnotationConsumeRequest with the name of a request in its
// namespace whose booking is live (booked reports it, by
// "namespace/name"). kube-scheduler binds such a pod to the booked nodes
// as they become ready; planning it would launch a second node for it, as
// Cluster Autoscaler, which also leaves these pods to their booking, does
// not. Once the booking ends (expired, revoked, consumed) the pod is an
// ordinary pending pod again.
func WaitingForBooking(pods []*corev1.Pod, booked func(key string) bool) (plan, waiting []*corev1.Pod) {
	for _, p := range pods {
		if name := p.Annotations[prv1.AnnotationConsumeRequest]; name != "" && booked != nil && booked(p.Namespace+"/"+name) {
			waiting = append(waiting, p)
			continue
		}
		plan = append(plan, p)
	}
	return plan, waiting
}
