package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// phases follows a scale-up from outside, as a user watching kubectl
// would, every 250 ms: when the first and the last of the pods were
// created, marked Unschedulable, bound and Running, and when the first and
// the last of the pool's NodeClaims were created, launched and initialized
// and their Nodes registered and Ready. The controller's own log adds when
// each provisioning cycle closed and what it planned.
type phaseTracker struct {
	start    time.Time
	app      string
	pool     string
	want     int
	mu       sync.Mutex
	first    map[string]time.Duration
	all      map[string]time.Duration
	maxSeen  map[string]int
	stop     chan struct{}
	finished chan struct{}
}

// phase names, in the order a pod goes through them.
var phaseOrder = []string{"pod created", "pod marked Unschedulable", "NodeClaim created", "NodeClaim launched (CreateFleet returned)",
	"Node registered", "Node Ready", "NodeClaim initialized", "pod bound", "pod Running"}

func trackPhases(t *testing.T, start time.Time, app, pool string, want int) *phaseTracker {
	p := &phaseTracker{start: start, app: app, pool: pool, want: want, first: map[string]time.Duration{}, all: map[string]time.Duration{},
		maxSeen: map[string]int{}, stop: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(p.finished)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			p.sample(t)
			select {
			case <-p.stop:
				p.sample(t)
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// done stops the tracking.
func (p *phaseTracker) done() {
	close(p.stop)
	<-p.finished
}

func (p *phaseTracker) sample(t *testing.T) {
	now := time.Since(p.start)
	counts := map[string]int{}
	var pods corev1.PodList
	if err := kube().List(ctx(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": p.app}); err != nil {
		return
	}
	for _, pod := range pods.Items {
		counts["pod created"]++
		unsched, bound := false, pod.Spec.NodeName != ""
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
				unsched = true
			}
		}
		if unsched || bound {
			counts["pod marked Unschedulable"]++ // a pod bound at once never needed a node
		}
		if bound {
			counts["pod bound"]++
		}
		if pod.Status.Phase == corev1.PodRunning {
			counts["pod Running"]++
		}
	}
	var claims nsv1.NodeClaimList
	if err := kube().List(ctx(), &claims, client.MatchingLabels{nsv1.LabelNodePool: p.pool}); err != nil {
		return
	}
	nodes := map[string]bool{}
	for _, c := range claims.Items {
		counts["NodeClaim created"]++
		if lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionLaunched) {
			counts["NodeClaim launched (CreateFleet returned)"]++
		}
		if lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionInitialized) {
			counts["NodeClaim initialized"]++
		}
		if c.Status.NodeName != "" {
			nodes[c.Status.NodeName] = true
		}
	}
	var nl corev1.NodeList
	if err := kube().List(ctx(), &nl, client.MatchingLabels{nsv1.LabelNodePool: p.pool}); err == nil {
		for _, n := range nl.Items {
			counts["Node registered"]++
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					counts["Node Ready"]++
				}
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, n := range counts {
		if n > 0 {
			if _, ok := p.first[k]; !ok {
				p.first[k] = now
			}
		}
		if n > p.maxSeen[k] {
			p.maxSeen[k] = n
			p.all[k] = now // the last time the count grew
		}
	}
}

// table prints the phases and the controller's provisioning cycles.
func (p *phaseTracker) table(logPath string, from time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "| phase (seconds after the Deployment was created) | first | last | count |\n|---|---:|---:|---:|\n")
	for _, k := range phaseOrder {
		if _, ok := p.first[k]; !ok {
			continue
		}
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %d |\n", k, p.first[k].Seconds(), p.all[k].Seconds(), p.maxSeen[k])
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
