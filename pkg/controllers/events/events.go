package events

import (
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Event is one Event to emit.
type Event struct {
	Object  runtime.Object
	UID     types.UID
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Action  string
	Message string
}

// Recorder emits Events, dropping repeats within the de-duplication window
// and per-pod events past their reason's rate (rateLimits).
type Recorder struct {
	rec    events.EventRecorder
	clk    clock.Clock
	window time.Duration

	mu     sync.Mutex
	seen   seenCache
	limits map[string]*rate.Limiter
}

// seenKey identifies repeats: the same reason and message on one object.
type seenKey struct {
	uid             types.UID
	reason, message string
}

// maxSeen bounds the de-duplication cache. Past it the oldest entries go
// first, even inside their window: a repeat of one of them may then be
// emitted again, which costs one Event write, never a lost first Event.
const maxSeen = 100_000

// seenCache remembers when each key was last emitted, for one window. The
// queue holds keys in emission order (the recorder's clock only moves
// forward), so expiry pops from its front: each entry is pushed once and
// popped once, constant time per publish however many entries are live.
type seenCache struct {
	last  map[seenKey]time.Time
	queue []seenEntry // emission order; head is the oldest
	head  int
}

type seenEntry struct {
	key seenKey
	at  time.Time
}

// recent reports whether key was emitted within window before now.
func (c *seenCache) recent(key seenKey, now time.Time, window time.Duration) bool {
	last, ok := c.last[key]
	return ok && now.Sub(last) < window
}

// add records key as emitted at now and forgets what left the window or
// exceeds the bound.
func (c *seenCache) add(key seenKey, now time.Time, window time.Duration) {
	if c.last == nil {
		c.last = map[seenKey]time.Time{}
	}
	c.last[key] = now
	c.queue = append(c.queue, seenEntry{key, now})
	for c.head < len(c.queue) {
		e := c.queue[c.head]
		if now.Sub(e.at) < window && len(c.queue)-c.head <= maxSeen {
			break
		}
		// An entry re-emitted later has a newer time in the map and a
		// later queue entry of its own: only its last one deletes it.
		if c.last[e.key].Equal(e.at) {
			delete(c.last, e.key)
		}
		c.queue[c.head] = seenEntry{}
		c.head++
	}
	// Reclaim the popped prefix once it is half the slice.
	if c.head > 1024 && c.head*2 >= len(c.queue) {
		n := copy(c.queue, c.queue[c.head:])
		clear(c.queue[n:])
		c.queue = c.queue[:n]
		c.head = 0
	}
}

// len is the number of keys remembered.
func (c *seenCache) len() int { return len(c.last) }

// rateLimits are the reasons that would otherwise send one event per pod of
// a burst, with their rate per second and burst, one bucket across all the
// objects they are about. A 1,000-pod scale-up nominates every pod in one
// cycle: 1,000 event writes to kube-apiserver while kube-scheduler is
// marking and binding those same pods. Like Karpenter's nomination events
// (5/s, burst 10), the first few are sent and the rest dropped; the Created
// event of each NodeClaim says how many pods it was made for.
var rateLimits = map[string]struct {
	perSecond rate.Limit
	burst     int
}{ReasonNominated: {perSecond: 5, burst: 10}}

// NewRecorder wraps rec; repeats within window are dropped, and events of a
// reason in rateLimits past its rate.
func NewRecorder(rec events.EventRecorder, clk clock.Clock, window time.Duration) *Recorder {
	limits := map[string]*rate.Limiter{}
	for reason, l := range rateLimits {
		limits[reason] = rate.NewLimiter(l.perSecond, l.burst)
	}
	return &Recorder{rec: rec, clk: clk, window: window, limits: limits}
}

// Publish emits each event unless an identical one was emitted within the
// window or its reason is over its rate. The rate is kept on the recorder's
// clock, so a simulated run drops the same events every time.
func (r *Recorder) Publish(evts ...Event) {
	if r == nil {
		return
	}
	now := r.clk.Now()
	for _, e := range evts {
		key := seenKey{e.UID, e.Reason, e.Message}
		r.mu.Lock()
		if r.seen.recent(key, now, r.window) {
			r.mu.Unlock()
			continue
		}
		if l := r.limits[e.Reason]; l != nil && !l.AllowN(now, 1) {
			r.mu.Unlock()
			continue
		}
		r.seen.add(key, now, r.window)
		r.mu.Unlock()
		r.rec.Eventf(e.Object, nil, e.Type, e.Reason, e.Action, "%s", Clip(e.Message))
	}
}

// MaxMessage is the longest note kube-apiserver accepts on an
// events.k8s.io/v1 Event, in bytes; a longer one is rejected and the event
// lost (a CreateFleet error listing every override runs past it).
const MaxMessage = 1024

// Clip cuts msg to MaxMessage bytes on a character boundary, ending it
// with "…" when cut.
func Clip(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	const more = "…"
	cut := MaxMessage - len(more)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + more
}

// ProviderNotices is the function a cloud provider is given to report its
// launch decisions (the AWS provider's Options.OnEvent): each becomes an
// Event on the claim through rec, a Warning when warning(reason) says so
// (a decision that costs money) and Normal otherwise. The controller and
// the simulator both use it.
func ProviderNotices(rec *Recorder, warning func(reason string) bool) func(claim *nsv1.NodeClaim, reason, msg string) {
	return func(claim *nsv1.NodeClaim, reason, msg string) {
		if warning(reason) {
			rec.Publish(Warning(claim, reason, "Launch", msg))
			return
		}
		rec.Publish(Normal(claim, reason, "Launch", msg))
	}
}

func obj(o interface {
	runtime.Object
	GetUID() types.UID
}, typ, reason, action, msg string) Event {
	return Event{Object: o, UID: o.GetUID(), Type: typ, Reason: reason, Action: action, Message: msg}
}

// Pod events.

// PodUnschedulable: the solver found no existing, in-flight or new node for
// the pod. The Event is about the pod, so the solver's "cannot place pod
// <namespace>/<name>: " is not said twice.
func PodUnschedulable(pod *corev1.Pod, reason string) Event {
	reason = strings.TrimPrefix(reason, "cannot place pod "+pod.Namespace+"/"+pod.Name+": ")
	return obj(pod, corev1.EventTypeWarning, "FailedProvisioning", "Provision", "cannot place pod: "+reason)
}

// PodBlocked: the pod is not planned yet, for a reason outside the solver
// (provisioning.Pending.Blocked: its volumes are not ready).
func PodBlocked(pod *corev1.Pod, reason string) Event {
	return obj(pod, corev1.EventTypeWarning, "ProvisioningBlocked", "Provision", "not planning pod yet: "+reason)
}

// ReasonNominated is PodNominated's reason; it is rate-limited (rateLimits).
const ReasonNominated = "Nominated"

// PodNominated: the pod will run on a node being launched or already
// running. Sent for the first pods of a burst only (rateLimits).
func PodNominated(pod *corev1.Pod, target string) Event {
	return obj(pod, corev1.EventTypeNormal, ReasonNominated, "Provision", "pod should schedule on "+target)
}

// PodEvictionBlocked: a drain waits for this pod (PDB or do-not-disrupt).
func PodEvictionBlocked(pod *corev1.Pod, why string) Event {
	return obj(pod, corev1.EventTypeWarning, "EvictionBlocked", "Drain", why)
}

// NodeClaim and Node events.

type object interface {
	runtime.Object
	GetUID() types.UID
}

// Normal is a Normal event on o.
func Normal(o object, reason, action, msg string) Event {
	return obj(o, corev1.EventTypeNormal, reason, action, msg)
}

// Warning is a Warning event on o.
func Warning(o object, reason, action, msg string) Event {
	return obj(o, corev1.EventTypeWarning, reason, action, msg)
}

// Reasons used on NodeClaims, Nodes and NodePools.
const (
	ReasonLaunched             = "Launched"
	ReasonLaunchFailed         = "LaunchFailed"
	ReasonInsufficientCapacity = "InsufficientCapacity"
	ReasonRegistered           = "Registered"
	ReasonInitialized          = "Initialized"
	ReasonLivenessTimeout      = "LivenessTimeout"
	ReasonDraining             = "Draining"
	ReasonDrainBlocked         = "DrainBlocked"
	ReasonGracePeriodElapsed   = "GracePeriodElapsed"
	ReasonTerminated           = "Terminated"
	ReasonInstanceGone         = "InstanceGone"
	// ReasonReservationEnded: the claim's ODCR ended; it is on-demand now.
	ReasonReservationEnded = "ReservationEnded"
	ReasonOrphanTerminated = "OrphanTerminated"
	ReasonEmpty            = "Empty"
	ReasonLimitReached     = "LimitReached"
)
