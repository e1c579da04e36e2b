package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// phaseTracker follows a scale-up from outside, as a user watching
// kubectl would: when the first and the last of the pods were created,
// marked Unschedulable, bound and Running, and when the first and the last
// of the pool's NodeClaims were created, launched and initialized and
// their Nodes registered and Ready. It watches (one informer per kind,
// restricted to the app's pods and the pool's claims and Nodes) and stamps
// each object the moment its watch event arrives, instead of listing every
// pod a few times a second: on two shared cores those lists of 1,000 pods
// cost kube-apiserver ≈ 2 s and the test ≈ 1 s of CPU per burst, and a
// starved poll blurred the phases by seconds. The controller's own
// log adds when each provisioning cycle closed and what it planned.
type phaseTracker struct {
	start  time.Time
	app    string
	pool   string
	cache  cache.Cache
	cancel context.CancelFunc
	mu     sync.Mutex
	// at holds, per phase, when each object (by UID) was first seen in it.
	at map[string]map[types.UID]time.Duration
	// podPhase is each live pod's phase, as last seen; terminating pods
	// are left out.
	podPhase map[types.UID]corev1.PodPhase
}

// phase names, in the order a pod goes through them.
var phaseOrder = []string{"pod created", "pod marked Unschedulable", "NodeClaim created", "NodeClaim launched (CreateFleet returned)",
	"Node registered", "Node Ready", "NodeClaim initialized", "pod bound", "pod Running"}

// trackPhases starts watching before the scale-up begins; it returns once
// the watches are established, so no event of the step is missed.
func trackPhases(t *testing.T, start time.Time, app, pool string) *phaseTracker {
	t.Helper()
	c, err := cache.New(lab.Env.Config, cache.Options{Scheme: lab.Env.Scheme, ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}:     {Namespaces: map[string]cache.Config{ns: {}}, Label: labels.SelectorFromSet(labels.Set{"app": app})},
		&nsv1.NodeClaim{}: {Label: labels.SelectorFromSet(labels.Set{nsv1.LabelNodePool: pool})},
		&corev1.Node{}:    {Label: labels.SelectorFromSet(labels.Set{nsv1.LabelNodePool: pool})},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx())
	p := &phaseTracker{start: start, app: app, pool: pool, cache: c, cancel: cancel,
		at: map[string]map[types.UID]time.Duration{}, podPhase: map[types.UID]corev1.PodPhase{}}
	for _, obj := range []client.Object{&corev1.Pod{}, &nsv1.NodeClaim{}, &corev1.Node{}} {
		inf, err := c.GetInformer(cctx, obj)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { p.observe(o) },
			UpdateFunc: func(_, o any) { p.observe(o) },
			DeleteFunc: p.forget,
		}); err != nil {
			cancel()
			t.Fatal(err)
		}
	}
	go func() { _ = c.Start(cctx) }()
	if !c.WaitForCacheSync(cctx) {
		cancel()
		t.Fatal("the phase tracker's watches did not sync")
	}
	return p
}

// done stops the watches.
func (p *phaseTracker) done() { p.cancel() }

// observe stamps the phases an object has reached.
func (p *phaseTracker) observe(o any) {
	now := time.Since(p.start)
	var uid types.UID
	var phases []string
	switch obj := o.(type) {
	case *corev1.Pod:
		uid, phases = obj.UID, podPhases(obj)
		p.mu.Lock()
		if obj.DeletionTimestamp.IsZero() {
			p.podPhase[uid] = obj.Status.Phase
		} else {
			delete(p.podPhase, uid)
		}
		p.mu.Unlock()
	case *nsv1.NodeClaim:
		uid, phases = obj.UID, []string{"NodeClaim created"}
		if lifecycle.IsTrue(obj.Status.Conditions, nsv1.ConditionLaunched) {
			phases = append(phases, "NodeClaim launched (CreateFleet returned)")
		}
		if lifecycle.IsTrue(obj.Status.Conditions, nsv1.ConditionInitialized) {
			phases = append(phases, "NodeClaim initialized")
		}
	case *corev1.Node:
		uid, phases = obj.UID, []string{"Node registered"}
		for _, c := range obj.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				phases = append(phases, "Node Ready")
			}
		}
	default:
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ph := range phases {
		if p.at[ph] == nil {
			p.at[ph] = map[types.UID]time.Duration{}
		}
		if _, ok := p.at[ph][uid]; !ok {
			p.at[ph][uid] = now
		}
	}
}

// forget drops a deleted pod from the counts (its phases stay stamped).
func (p *phaseTracker) forget(o any) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	if pod, ok := o.(*corev1.Pod); ok {
		p.mu.Lock()
		delete(p.podPhase, pod.UID)
		p.mu.Unlock()
	}
}

func podPhases(pod *corev1.Pod) []string {
	phases := []string{"pod created"}
	unsched, bound := false, pod.Spec.NodeName != ""
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
			unsched = true
		}
	}
	if unsched || bound {
		phases = append(phases, "pod marked Unschedulable") // a pod bound at once never needed a node
	}
	if bound {
		phases = append(phases, "pod bound")
	}
	if pod.Status.Phase == corev1.PodRunning {
		phases = append(phases, "pod Running")
	}
	return phases
}

// pods counts the app's pods by phase as the watch last saw them (no
// request, and no copy of 1,000 pods four times a second).
func (p *phaseTracker) pods() (running, pending, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, phase := range p.podPhase {
		total++
		switch phase {
		case corev1.PodRunning:
			running++
		case corev1.PodPending:
			pending++
		}
	}
	return running, pending, total
}

// claims are the pool's NodeClaims, from the watch.
func (p *phaseTracker) claims(t testing.TB) []nsv1.NodeClaim {
	t.Helper()
	var list nsv1.NodeClaimList
	if err := p.cache.List(ctx(), &list, client.MatchingLabels{nsv1.LabelNodePool: p.pool}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// table prints the phases and the controller's provisioning cycles.
func (p *phaseTracker) table(logPath string, from time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "| phase (seconds after the Deployment was created) | first | last | count |\n|---|---:|---:|---:|\n")
	for _, k := range phaseOrder {
		if len(p.at[k]) == 0 {
			continue
		}
		first, last := time.Duration(math.MaxInt64), time.Duration(0)
		for _, d := range p.at[k] {
			first, last = min(first, d), max(last, d)
		}
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %d |\n", k, first.Seconds(), last.Seconds(), len(p.at[k]))
	}
	for _, c := range cycles(logPath, from) {
		fmt.Fprintf(&b, "| provisioning cycle: %d pending, %d nominated, %d new NodeClaims, %d unschedulable, solved in %s | %.1f | | |\n",
			c.pending, c.nominated, c.claims, c.unschedulable, c.duration, c.at.Sub(p.start).Seconds())
	}
	return b.String()
}

type cycle struct {
	at                                        time.Time
	pending, nominated, claims, unschedulable int
	duration                                  string
}

// cycles reads the controller's "provisioning cycle" log lines since from.
func cycles(logPath string, from time.Time) []cycle {
	f, err := os.Open(logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []cycle
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct {
			Msg           string  `json:"msg"`
			TS            float64 `json:"ts"`
			Pending       int     `json:"pending"`
			Nominated     int     `json:"nominated"`
			NewClaims     int     `json:"newClaims"`
			Unschedulable int     `json:"unschedulable"`
			Duration      string  `json:"duration"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Msg != "provisioning cycle" {
			continue
		}
		at := time.Unix(0, int64(l.TS*float64(time.Second)))
		if at.Before(from) {
			continue
		}
		out = append(out, cycle{at: at, pending: l.Pending, nominated: l.Nominated, claims: l.NewClaims, unschedulable: l.Unschedulable, duration: l.Duration})
	}
	return out
}
