package whatif

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/disruption"
	"github.com/nodesmith/nodesmith/pkg/disruption/budget"
	"github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// These tests drive every path that measures a pool's disruption budgets
// (the planner, explain, the interruption handler's rebalance drain) over
// the same pools, against a reference count written here from Karpenter's
// documented rule: a percentage is of the pool's initialized nodes (not
// replacements still launching), rounded up; nodes being deleted, marked
// for disruption or not Ready use up the allowance.

// nodeState is how one of the pool's claims stands.
type nodeState struct {
	launching bool   // not initialized yet: a replacement in flight
	noNode    bool   // launching and not registered: no Node at all
	deleting  bool   // deletionTimestamp set
	command   bool   // marked by a disruption command
	mark      string // the interruption handler's Disrupting reason
	notReady  bool   // the node's Ready condition is False
	busy      bool   // runs a workload pod
}

// ledgerSnapshot is pool default (budgets bs) with one claim per state.
func ledgerSnapshot(bs []nsv1.Budget, states []nodeState, at time.Time) *Snapshot {
	s := baseSnapshot()
	s.TakenAt = metav1.NewTime(at)
	s.NodeClaims, s.Nodes, s.Pods = nil, nil, nil
	s.NodePools[0].Spec.Disruption.Budgets = bs
	for i, st := range states {
		name := fmt.Sprintf("node-%02d", i)
		c, n := nodesmithNode(name, "m6g.large", "spot", "us-east-1a", "0.0342", "1930m", "6Gi")
		if st.launching {
			c.Status.Conditions = nil
		}
		if st.deleting {
			c.DeletionTimestamp = &metav1.Time{Time: at.Add(-time.Minute)}
			c.Finalizers = []string{"test"}
		}
		if st.command {
			c.Annotations = map[string]string{nsv1.AnnotationDisruptionCommand: "cmd-1"}
		}
		if st.mark != "" {
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: nsv1.ConditionDisrupting, Status: metav1.ConditionTrue, Reason: st.mark})
		}
		if st.notReady {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
		}
		s.NodeClaims = append(s.NodeClaims, c)
		if st.noNode {
			s.NodeClaims[len(s.NodeClaims)-1].Status.NodeName, s.NodeClaims[len(s.NodeClaims)-1].Status.ProviderID = "", ""
			continue
		}
		s.Nodes = append(s.Nodes, n)
		if st.busy {
			s.Pods = append(s.Pods, boundPod("web-"+name, name, "250m", "256Mi"))
		}
	}
	return s
}

// reference is the pool's node and disrupting counts by the documented
// rule, counted here independently of pkg/disruption/budget.
func reference(s *Snapshot) (total, disrupting int) {
	nodes := map[string]*corev1.Node{}
	for i := range s.Nodes {
		nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	for _, c := range s.NodeClaims {
		if !lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionInitialized) {
			continue
		}
		total++
		d := meta.FindStatusCondition(c.Status.Conditions, nsv1.ConditionDisrupting)
		forced := d != nil && d.Status == metav1.ConditionTrue && d.Reason != nsv1.DisruptingReasonRebalanceRecommendation
		n := nodes[c.Status.NodeName]
		notReady := n != nil && len(n.Status.Conditions) > 0 && n.Status.Conditions[0].Status != corev1.ConditionTrue
		if c.DeletionTimestamp != nil || c.Annotations[nsv1.AnnotationDisruptionCommand] != "" || forced || notReady {
			disrupting++
		}
	}
	return total, disrupting
}

// paths is what each path answers about pool default at the snapshot's time.
type paths struct {
	plan       *disruption.Plan
	report     *NodeReport
	rebalance  int
	poolBudget []nsv1.Budget
}

func drive(t *testing.T, s *Snapshot) paths {
	t.Helper()
	w, err := newWorld(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	types, _ := w.poolTypes()
	plan, err := disruption.Compute(disruption.Input{Snapshot: w.idx, InstanceTypes: types, NodeClasses: w.classes, Now: s.TakenAt.Time})
	if err != nil {
		t.Fatal(err)
	}
	p := paths{plan: plan, poolBudget: s.NodePools[0].Spec.Disruption.Budgets}
	for _, n := range s.Nodes {
		if p.report, err = ExplainNode(s, n.Name, Options{}); err != nil {
			t.Fatal(err)
		}
		break
	}
	idx := s.Index()
	p.rebalance, _ = interruption.RebalanceBudget(idx.NodePools[0], idx.NodeClaims, idx.Nodes, s.TakenAt.Time)
	return p
}

func limit(bs []nsv1.Budget, r nsv1.DisruptionReason, total int, at time.Time) int {
	l, _ := budget.Limit(bs, r, total, at)
	return l
}

// check fails when a path lets more of the pool go than the reference, or
// reports another count; it returns the number of nodes the plan disrupts.
func check(t *testing.T, label string, s *Snapshot, p paths) int {
	t.Helper()
	at := s.TakenAt.Time
	total, disrupting := reference(s)
	bs := p.poolBudget
	for _, r := range nsv1.DisruptionReasons {
		want := max(0, limit(bs, r, total, at)-disrupting)
		if got := p.plan.Allowed["default"][r]; got != want {
			t.Fatalf("%s: planner allows %d %s disruptions; %d nodes, %d disrupting, budgets %+v allow %d", label, got, r, total, disrupting, bs, want)
		}
	}
	taken := 0
	for _, a := range p.plan.Actions {
		switch {
		case a.Hold:
			continue // a prespin command takes no budget while it holds its node
		case a.Method == disruption.MethodInterruption && a.Forced:
			continue // exempt, and the ledger already counts the marked node
		}
		for _, c := range a.Candidates {
			// A NotReady node is in the ledger already: acting on it
			// takes nothing more.
			if !(budget.NotReady(c.Node) && lifecycle.IsTrue(c.Claim.Status.Conditions, nsv1.ConditionInitialized)) {
				taken++
			}
		}
		if l := limit(bs, a.Reason, total, at); disrupting+taken > l {
			t.Fatalf("%s: the plan has %d nodes disrupting after %s %s, over the %s limit %d of %d nodes (budgets %+v)",
				label, disrupting+taken, a.Method, a.Candidates[0].Claim.Name, a.Reason, l, total, bs)
		}
	}
	if want := max(0, limit(bs, nsv1.DisruptionReasonRebalance, total, at)-disrupting); p.rebalance != want {
		t.Fatalf("%s: the interruption handler allows %d rebalance drains; %d nodes, %d disrupting, budgets %+v allow %d", label, p.rebalance, total, disrupting, bs, want)
	}
	if p.report != nil {
		if p.report.PoolNodes != total || p.report.Disrupting != disrupting {
			t.Fatalf("%s: explain counts %d nodes, %d disrupting; want %d, %d", label, p.report.PoolNodes, p.report.Disrupting, total, disrupting)
		}
		for _, b := range p.report.Budgets {
			if want, _ := budget.Nodes(b.Nodes, total); b.Allows != want {
				t.Fatalf("%s: explain says budget %q allows %d of the pool's nodes; %d of %d", label, b.Nodes, b.Allows, want, total)
			}
		}
	}
	return taken
}

// TestBudgetPathsAgreeTenPercentOfTen pins issue 22: a pool of 10 nodes
// under the default 10 % while one replacement launches may have 1 node
// disrupting, on every path (the interruption handler counted the
// replacement and let 2 go; explain reported 2).
func TestBudgetPathsAgreeTenPercentOfTen(t *testing.T) {
	ten := func(extra ...nodeState) []nodeState { return append(make([]nodeState, 10-len(extra)), extra...) }
	for _, tt := range []struct {
		name   string
		states []nodeState
		want   int // nodes any path may start disrupting
	}{
		{name: "one replacement launching", states: append(ten(), nodeState{launching: true, noNode: true}), want: 1},
		{name: "one replacement registered, not initialized", states: append(ten(), nodeState{launching: true}), want: 1},
		{name: "the replaced node deleting", states: append(ten(nodeState{deleting: true}), nodeState{launching: true, noNode: true}), want: 0},
		{name: "a node not Ready", states: append(ten(nodeState{notReady: true}), nodeState{launching: true, noNode: true}), want: 0},
		{name: "a node marked for a spot interruption", states: append(ten(nodeState{mark: nsv1.DisruptingReasonSpotInterruption}), nodeState{launching: true, noNode: true}), want: 0},
		{name: "a node waiting on a rebalance recommendation", states: append(ten(nodeState{mark: nsv1.DisruptingReasonRebalanceRecommendation}), nodeState{launching: true, noNode: true}), want: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := ledgerSnapshot(nil, tt.states, now)
			p := drive(t, s)
			check(t, tt.name, s, p)
			if got := p.plan.Allowed["default"][nsv1.DisruptionReasonEmpty]; got != tt.want {
				t.Errorf("planner allows %d, want %d", got, tt.want)
			}
			if p.rebalance != tt.want {
				t.Errorf("interruption handler allows %d, want %d", p.rebalance, tt.want)
			}
			if p.report.PoolNodes != 10 || p.report.Budgets[0].Allows != 1 {
				t.Errorf("explain: %d nodes, budget allows %d; want 10 and 1", p.report.PoolNodes, p.report.Budgets[0].Allows)
			}
			empties := 0
			for _, a := range p.plan.Actions {
				if a.Method == disruption.MethodEmptiness {
					empties += len(a.Candidates)
				}
			}
			if empties != tt.want {
				t.Errorf("the plan disrupts %d of 10 empty nodes, want %d", empties, tt.want)
			}
		})
	}
}

// TestBudgetPathsProperty: over random pools (node states, in-flight
// replacements, budgets with reasons and windows, times of day) no path
// lets more nodes go than the budgets allow over the documented count, and
// each reports that count.
func TestBudgetPathsProperty(t *testing.T) {
	const runs = 60
	disrupted := 0
	for seed := int64(0); seed < runs; seed++ {
		r := rand.New(rand.NewSource(seed))
		var bs []nsv1.Budget
		for i := r.Intn(4); i > 0; i-- {
			b := nsv1.Budget{Nodes: fmt.Sprint(r.Intn(4))}
			if r.Intn(2) == 0 {
				b.Nodes = fmt.Sprintf("%d%%", []int{0, 10, 20, 25, 50, 100}[r.Intn(6)])
			}
			all := append(append([]nsv1.DisruptionReason{}, nsv1.DisruptionReasons...), nsv1.DisruptionReasonRebalance)
			for j := r.Intn(3); j > 0 && r.Intn(2) == 0; j-- {
				b.Reasons = append(b.Reasons, all[r.Intn(len(all))])
			}
			if r.Intn(3) == 0 {
				sched := []string{"0 9 * * *", "0 * * * *", "@daily", "30 11 * * mon-fri"}[r.Intn(4)]
				b.Schedule, b.Duration = &sched, &metav1.Duration{Duration: time.Duration(1+r.Intn(8)) * 30 * time.Minute}
			}
			bs = append(bs, b)
		}
		var states []nodeState
		for i := 3 + r.Intn(12); i > 0; i-- {
			var st nodeState
			switch r.Intn(14) {
			case 0:
				st.launching, st.noNode = true, true
			case 1:
				st.launching = true
			case 2:
				st.deleting = true
			case 3:
				st.command = true
			case 4:
				st.mark = nsv1.DisruptingReasonSpotInterruption
			case 5:
				st.mark = nsv1.DisruptingReasonRebalanceRecommendation
			case 6:
				st.notReady = true
			case 7:
				st.launching, st.deleting = true, true
			}
			st.busy = r.Intn(3) == 0
			states = append(states, st)
		}
		s := ledgerSnapshot(bs, states, now.Add(time.Duration(r.Intn(24*60))*time.Minute))
		disrupted += check(t, fmt.Sprintf("seed %d", seed), s, drive(t, s))
	}
	if disrupted < runs/2 {
		t.Fatalf("only %d nodes disrupted over %d random pools: the budgets are not exercised", disrupted, runs)
	}
	t.Logf("%d nodes disrupted over %d random pools", disrupted, runs)
}
