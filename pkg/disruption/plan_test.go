package disruption

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// summary renders an action as Method[candidates]+replacements.
func summary(a *Action) string {
	var names []string
	for _, c := range a.Candidates {
		names = append(names, c.Node.Name)
	}
	sort.Strings(names)
	s := fmt.Sprintf("%s[%s]", a.Method, strings.Join(names, " "))
	if len(a.Replacements) > 0 {
		s += fmt.Sprintf("+%d", len(a.Replacements))
	}
	return s
}

func summaries(p *Plan) []string {
	var out []string
	for _, a := range p.Actions {
		out = append(out, summary(a))
	}
	return out
}

func TestPlan(t *testing.T) {
	const od, spot = nsv1.CapacityTypeOnDemand, nsv1.CapacityTypeSpot
	tests := []struct {
		name string
		// build returns the world and the input; the node names it creates
		// are <pool>-<seq>, seq counting every node and pod made.
		build       func() Input
		want        []string
		wantSkips   map[string]SkipReason
		checkAction func(t *testing.T, a *Action)
	}{
		{
			name: "an empty node past consolidateAfter is deleted",
			build: func() Input {
				w := newWorld(pool("p", consolidateAfter("5m")))
				n := w.node("p", "medium", "zone-a", od, lastPodEvent(10*time.Minute))
				w.pod(n, "100m", daemonPod)
				busy := w.node("p", "small", "zone-a", od)
				w.pod(busy, "1500m")
				return w.input()
			},
			want:      []string{"Emptiness[p-01]"},
			wantSkips: map[string]SkipReason{"p-03": SkipNotCheaper},
			checkAction: func(t *testing.T, a *Action) {
				if a.Savings != 0.20 || a.Reason != nsv1.DisruptionReasonEmpty || len(a.Pods) != 0 {
					t.Errorf("savings %v reason %s pods %d, want 0.20 Empty 0", a.Savings, a.Reason, len(a.Pods))
				}
			},
		},
		{
			name: "churn: an empty node within consolidateAfter stays",
			build: func() Input {
				w := newWorld(pool("p", consolidateAfter("5m")))
				w.node("p", "medium", "zone-a", od, lastPodEvent(2*time.Minute))
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipConsolidateAfter},
		},
		{
			name: "consolidateAfter Never keeps empty nodes",
			build: func() Input {
				w := newWorld(pool("p", consolidateAfter("Never")))
				w.node("p", "medium", "zone-a", od)
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipConsolidationDisabled},
		},
		{
			name: "two underused nodes: one is deleted, its pods move to the other",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "medium", "zone-a", od)
				w.pod(a, "1")
				b := w.node("p", "medium", "zone-b", od)
				w.pod(b, "1100m")
				return w.input()
			},
			// Replacing both with one medium would be deleting one with
			// extra churn; the other node received pods and waits for the
			// next plan.
			want: []string{"SingleNodeConsolidation[p-01]"},
			checkAction: func(t *testing.T, a *Action) {
				if len(a.Replacements) != 0 || a.Savings != 0.20 || len(a.Pods) != 1 {
					t.Errorf("replacements %d savings %v pods %d", len(a.Replacements), a.Savings, len(a.Pods))
				}
			},
		},
		{
			name: "three underused nodes become one cheaper node",
			build: func() Input {
				w := newWorld(pool("p"))
				for _, z := range []string{"zone-a", "zone-b", "zone-a"} {
					n := w.node("p", "medium", z, od)
					w.pod(n, "500m")
				}
				return w.input()
			},
			want: []string{"MultiNodeConsolidation[p-01 p-03 p-05]+1"},
			checkAction: func(t *testing.T, a *Action) {
				r := a.Replacements[0]
				if r.Options[0].InstanceType.Name != "small" {
					t.Errorf("replacement %s, want small", r.Options[0].InstanceType.Name)
				}
				for _, o := range r.Options {
					if o.Price > 0.60*0.9 || o.InstanceType.Name == "medium" {
						t.Errorf("option %s at %v: dearer than 90%% of $0.60 or a candidate's type", o.InstanceType.Name, o.Price)
					}
				}
				if len(a.Pods) != 3 || a.Savings < 0.499 {
					t.Errorf("pods %d savings %v, want 3 and 0.50", len(a.Pods), a.Savings)
				}
			},
		},
		{
			name: "a node whose pods fit elsewhere is deleted",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "large", "zone-a", od)
				w.pod(a, "2")
				b := w.node("p", "small", "zone-a", od)
				w.pod(b, "500m")
				return w.input()
			},
			// Removing both needs a medium ($0.20 ≤ 90% of $0.50) — more
			// saved than deleting the small node alone.
			want: []string{"MultiNodeConsolidation[p-01 p-03]+1"},
		},
		{
			name: "a large node with little on it is replaced by a cheaper one",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "large", "zone-a", od)
				w.pod(a, "1")
				return w.input()
			},
			want: []string{"SingleNodeConsolidation[p-01]+1"},
			checkAction: func(t *testing.T, a *Action) {
				if got := a.Replacements[0].Options[0].InstanceType.Name; got != "small" {
					t.Errorf("replacement %s, want small", got)
				}
				if a.Savings < 0.29 {
					t.Errorf("savings %v, want 0.30", a.Savings)
				}
			},
		},
		{
			// The pool's limit names a resource no pod asks for: the
			// replacement's capacity counts against it like any launch's,
			// in the room the node it replaces leaves (poolsWithout).
			name: "a replacement that would take the pool past a limit on an extended resource is not made",
			build: func() Input {
				w := newWorld(pool("p", func(np *nsv1.NodePool) {
					np.Spec.Limits = nsv1.Limits{"example.com/widget": resource.MustParse("1")}
				}))
				for i, it := range w.types["p"] {
					cp := *it
					cp.Capacity = it.Capacity.DeepCopy()
					cp.Capacity["example.com/widget"] = resource.MustParse("2")
					if it.Name == "large" {
						cp.Capacity["example.com/widget"] = resource.MustParse("1")
					}
					w.types["p"][i] = &cp
				}
				a := w.node("p", "large", "zone-a", od, func(c *nsv1.NodeClaim, _ *corev1.Node) {
					c.Status.Capacity = w.types["p"][2].Capacity.DeepCopy()
				})
				w.pod(a, "1")
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipNowhereToGo},
		},
		{
			// Under a binding limit a replacement fits in the room its
			// node leaves: counting the node it replaces refused every
			// replacement, and a shrunk fleet kept the burst's nodes.
			name: "a replacement fits a binding limit in the room the node it replaces leaves",
			build: func() Input {
				w := newWorld(pool("p", func(np *nsv1.NodePool) {
					np.Spec.Limits = nsv1.Limits{"example.com/widget": resource.MustParse("1")}
				}))
				for i, it := range w.types["p"] {
					cp := *it
					cp.Capacity = it.Capacity.DeepCopy()
					cp.Capacity["example.com/widget"] = resource.MustParse("1")
					w.types["p"][i] = &cp
				}
				a := w.node("p", "large", "zone-a", od, func(c *nsv1.NodeClaim, _ *corev1.Node) {
					c.Status.Capacity = w.types["p"][2].Capacity.DeepCopy()
				})
				w.pod(a, "1")
				return w.input()
			},
			want: []string{"SingleNodeConsolidation[p-01]+1"},
		},
		{
			name: "churn: a replacement saving less than 10% is not made",
			build: func() Input {
				w := newWorld(pool("p"))
				w.types["p"] = append(catalogTypes(), itype("medium-b", 4, 0.19, 0))
				a := w.node("p", "medium", "zone-a", od)
				w.pod(a, "3")
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipNotCheaper},
		},
		{
			name: "a replacement saving more than a custom 3% share is made",
			build: func() Input {
				w := newWorld(pool("p"))
				w.types["p"] = append(catalogTypes(), itype("medium-b", 4, 0.19, 0))
				a := w.node("p", "medium", "zone-a", od)
				w.pod(a, "3")
				return w.input(func(in *Input) { in.Options.MinSavingsShare = 0.03 })
			},
			want: []string{"SingleNodeConsolidation[p-01]+1"},
		},
		{
			name: "churn: two nodes are not replaced by one of their own type; the small one is deleted instead",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "medium", "zone-a", od)
				w.pod(a, "2")
				b := w.node("p", "small", "zone-a", od)
				w.pod(b, "1500m")
				return w.input()
			},
			want: []string{"SingleNodeConsolidation[p-03]"},
		},
		{
			name: "churn: never toward an offering out of capacity",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "large", "zone-a", od)
				w.pod(a, "1")
				return w.input(func(in *Input) {
					in.Unavailable = func(it, _, _ string) bool { return it == "small" || it == "medium" }
				})
			},
			wantSkips: map[string]SkipReason{"p-01": SkipNotCheaper},
		},
		{
			name: "churn: a do-not-disrupt pod keeps its node",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "large", "zone-a", od)
				w.pod(a, "1", podAnnotation(nsv1.AnnotationDoNotDisrupt, "true"))
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipPodDoNotDisrupt},
		},
		{
			name: "a do-not-disrupt duration that has passed no longer holds",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "large", "zone-a", od)
				w.pod(a, "1", podAnnotation(nsv1.AnnotationDoNotDisrupt, "30m"))
				return w.input()
			},
			want: []string{"SingleNodeConsolidation[p-01]+1"},
		},
		{
			name: "churn: a do-not-disrupt node is kept, even empty",
			build: func() Input {
				w := newWorld(pool("p"))
				w.node("p", "large", "zone-a", od, nodeAnnotation(nsv1.AnnotationDoNotDisrupt, "true"))
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipNodeDoNotDisrupt},
		},
		{
			name: "churn: pods with nowhere to go keep their node",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "large", "zone-a", od)
				w.pod(a, "1", pinnedTo(a))
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipNowhereToGo},
		},
		{
			name: "churn: a node younger than consolidateAfter is not consolidated",
			build: func() Input {
				w := newWorld(pool("p", consolidateAfter("10m")))
				a := w.node("p", "large", "zone-a", od, lastPodEvent(time.Minute))
				w.pod(a, "1")
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipConsolidateAfter},
		},
		{
			name: "a WhenEmpty pool does not consolidate busy nodes",
			build: func() Input {
				w := newWorld(pool("p", policy(nsv1.ConsolidationPolicyWhenEmpty)))
				a := w.node("p", "large", "zone-a", od)
				w.pod(a, "1")
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipPolicyWhenEmpty},
		},
		{
			name: "churn: a PodDisruptionBudget that allows nothing keeps the node",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "large", "zone-a", od)
				w.pod(a, "1", labelled("app", "db"))
				w.pdb("db", 0, map[string]string{"app": "db"})
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipPodDisruptionBudget},
		},
		{
			name: "churn: pods nominated to a node keep it",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "large", "zone-a", od)
				pending := w.pod("", "1", unschedulable)
				return w.input(func(in *Input) {
					in.Nominated = func(uid types.UID) (string, time.Time, bool) { return a, in.Now.Add(time.Minute), uid == pending.UID }
				})
			},
			wantSkips: map[string]SkipReason{"p-01": SkipPodsNominated},
		},
		{
			name: "a node a ProvisioningRequest booked is kept while the booking holds",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "large", "zone-a", od)
				return w.input(func(in *Input) { in.Booked = func(t string) bool { return t == a } })
			},
			wantSkips: map[string]SkipReason{"p-01": SkipBooked},
		},
		{
			name: "a booking of another node does not keep an empty one",
			build: func() Input {
				w := newWorld(pool("p"))
				w.node("p", "large", "zone-a", od)
				return w.input(func(in *Input) { in.Booked = func(t string) bool { return t == "elsewhere" } })
			},
			want: []string{"Emptiness[p-01]"},
		},
		{
			name: "churn: spot to spot is off without the feature gate",
			build: func() Input {
				w := newWorld(pool("p"))
				w.types["p"] = spotCatalog(20)
				a := w.node("p", "big-00", "zone-a", spot)
				w.pod(a, "500m")
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipSpotToSpotDisabled},
		},
		{
			name: "churn: spot to spot needs 15 spot options",
			build: func() Input {
				w := newWorld(pool("p"))
				w.types["p"] = spotCatalog(5) // 5 small types × 2 zones = 10 options
				a := w.node("p", "big-00", "zone-a", spot)
				w.pod(a, "500m")
				return w.input(func(in *Input) { in.Options.SpotToSpotConsolidation = true })
			},
			wantSkips: map[string]SkipReason{"p-01": SkipSpotToSpotFlexibility},
		},
		{
			name: "spot to spot with the gate and 15 options",
			build: func() Input {
				w := newWorld(pool("p"))
				w.types["p"] = spotCatalog(10)
				a := w.node("p", "big-00", "zone-a", spot)
				w.pod(a, "500m")
				return w.input(func(in *Input) { in.Options.SpotToSpotConsolidation = true })
			},
			want: []string{"SingleNodeConsolidation[p-01]+1"},
			checkAction: func(t *testing.T, a *Action) {
				if n := len(a.Replacements[0].Options); n < 15 {
					t.Errorf("%d options, want at least 15", n)
				}
			},
		},
		{
			name: "the replacement holds the DaemonSet overhead too",
			build: func() Input {
				w := newWorld(pool("p"))
				w.daemonSet("1")
				a := w.node("p", "large", "zone-a", od)
				w.pod(a, "1", daemonPod)
				w.pod(a, "1500m")
				return w.input()
			},
			// 1.5 cpu of pods + 1 cpu of agent do not fit a small (1.9 cpu).
			want: []string{"SingleNodeConsolidation[p-01]+1"},
			checkAction: func(t *testing.T, a *Action) {
				if got := a.Replacements[0].Options[0].InstanceType.Name; got != "medium" {
					t.Errorf("replacement %s, want medium", got)
				}
			},
		},
		{
			name: "a node drifted from its pool's template is replaced",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "small", "zone-a", od)
				w.pod(a, "1500m")
				w.pools["p"].Spec.Template.Spec.Taints = nil
				w.pools["p"].Spec.Template.ObjectMeta.Labels = map[string]string{"team": "new"}
				return w.input()
			},
			want: []string{"Drift[p-01]+1"},
			checkAction: func(t *testing.T, a *Action) {
				if a.Reason != nsv1.DisruptionReasonDrifted || !strings.Contains(a.Candidates[0].Why, "template changed") {
					t.Errorf("reason %s why %q", a.Reason, a.Candidates[0].Why)
				}
			},
		},
		{
			name: "a node of another hash version is not drifted on its hash",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "small", "zone-a", od, claimAnnotation(nsv1.AnnotationNodePoolHashVersion, "v0"))
				w.pod(a, "1500m")
				w.pools["p"].Spec.Template.ObjectMeta.Labels = map[string]string{"team": "new"}
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipNotCheaper},
		},
		{
			name: "a node outside its pool's new requirements is replaced",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "small", "zone-a", od)
				w.pod(a, "1500m")
				w.pools["p"].Spec.Template.Spec.Requirements = []nsv1.NodeSelectorRequirementWithMinValues{{Key: "topology.kubernetes.io/zone", Operator: "In", Values: []string{"zone-b"}}}
				return w.input()
			},
			want: []string{"Drift[p-01]+1"},
			checkAction: func(t *testing.T, a *Action) {
				for _, o := range a.Replacements[0].Options {
					if o.Zone != "zone-b" {
						t.Errorf("replacement option in %s", o.Zone)
					}
				}
			},
		},
		{
			name: "a new AMI rolls the node",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "small", "zone-a", od)
				w.pod(a, "1500m")
				w.classes["default"].Status.AMIs = []awsv1.AMI{{ID: "ami-2", Architecture: "amd64"}}
				return w.input()
			},
			want: []string{"Drift[p-01]+1"},
		},
		{
			name: "a changed subnet set rolls the node",
			build: func() Input {
				w := newWorld(pool("p"))
				w.node("p", "small", "zone-a", od)
				w.pod("p-01", "1500m")
				w.classes["default"].Status.Subnets = []awsv1.Subnet{{ID: "subnet-c", Zone: "zone-a"}}
				return w.input()
			},
			want: []string{"Drift[p-01]+1"},
		},
		{
			name: "a changed security group set rolls the node",
			build: func() Input {
				w := newWorld(pool("p"))
				w.node("p", "small", "zone-a", od)
				w.pod("p-01", "1500m")
				w.classes["default"].Status.SecurityGroups = []awsv1.SecurityGroup{{ID: "sg-1"}, {ID: "sg-2"}}
				return w.input()
			},
			want: []string{"Drift[p-01]+1"},
		},
		{
			name: "changed launch settings in the node class roll the node",
			build: func() Input {
				w := newWorld(pool("p"))
				w.node("p", "small", "zone-a", od)
				w.pod("p-01", "1500m")
				ud := "echo hi"
				w.classes["default"].Spec.UserData = &ud
				return w.input()
			},
			want: []string{"Drift[p-01]+1"},
		},
		{
			name: "an empty drifted node is deleted without a replacement",
			build: func() Input {
				w := newWorld(pool("p", consolidateAfter("1h")))
				w.node("p", "small", "zone-a", od, lastPodEvent(time.Minute))
				w.classes["default"].Status.AMIs = []awsv1.AMI{{ID: "ami-2"}}
				return w.input()
			},
			want: []string{"Drift[p-01]"},
		},
		{
			name: "an expired node is replaced",
			build: func() Input {
				w := newWorld(pool("p"))
				w.node("p", "small", "zone-a", od, createdAgo(721*time.Hour))
				w.pod("p-01", "1500m")
				return w.input()
			},
			want: []string{"Expiration[p-01]+1"},
			checkAction: func(t *testing.T, a *Action) {
				if a.Reason != nsv1.DisruptionReasonExpired {
					t.Errorf("reason %s", a.Reason)
				}
			},
		},
		{
			name: "forced expiry: a do-not-disrupt pod does not keep an expired node",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "small", "zone-a", od, createdAgo(721*time.Hour))
				w.pod(a, "1500m", podAnnotation(nsv1.AnnotationDoNotDisrupt, "true"))
				return w.input()
			},
			want:        []string{"Expiration[p-01]+1"},
			checkAction: forcedExpiry,
		},
		{
			name: "forced expiry: a do-not-disrupt node and a PDB that allows nothing do not keep it",
			build: func() Input {
				w := newWorld(pool("p"))
				a := w.node("p", "small", "zone-a", od, createdAgo(721*time.Hour), nodeAnnotation(nsv1.AnnotationDoNotDisrupt, "true"))
				w.pod(a, "1500m", labelled("app", "db"))
				w.pdb("db", 0, map[string]string{"app": "db"})
				return w.input()
			},
			want:        []string{"Expiration[p-01]+1"},
			checkAction: forcedExpiry,
		},
		{
			name: "forced expiry: a zero budget does not hold it, and it uses up the budget of the rest",
			build: func() Input {
				w := newWorld(pool("p", budgets(nsv1.Budget{Nodes: "1"})))
				a := w.node("p", "medium", "zone-a", od, createdAgo(721*time.Hour))
				w.pod(a, "3")
				b := w.node("p", "medium", "zone-a", od, createdAgo(800*time.Hour))
				w.pod(b, "3")
				w.node("p", "small", "zone-a", od) // empty, too small for their pods: held by the budget the expiries used
				return w.input()
			},
			want:        []string{"Expiration[p-01]+1", "Expiration[p-03]+1"},
			wantSkips:   map[string]SkipReason{"p-05": SkipBudget},
			checkAction: forcedExpiry,
		},
		{
			name: "forced expiry: pods that fit nowhere do not keep it",
			build: func() Input {
				w := newWorld(pool("p", budgets(nsv1.Budget{Nodes: "0"})))
				a := w.node("p", "small", "zone-a", od, createdAgo(721*time.Hour))
				w.pod(a, "1500m", pinnedTo(a))
				return w.input()
			},
			want: []string{"Expiration[p-01]"},
			checkAction: func(t *testing.T, a *Action) {
				forcedExpiry(t, a)
				if !strings.Contains(a.Message, "fit nowhere") {
					t.Errorf("message %q does not say the pod waits Pending", a.Message)
				}
			},
		},
		{
			name: "expireAfter Never never expires",
			build: func() Input {
				w := newWorld(pool("p"))
				w.node("p", "small", "zone-a", od, createdAgo(10000*time.Hour), func(c *nsv1.NodeClaim, _ *corev1.Node) {
					c.Spec.ExpireAfter = nsv1.MustParseNillableDuration("Never")
				})
				w.pod("p-01", "1500m")
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipNotCheaper},
		},
		{
			name: "the budget caps empty nodes",
			build: func() Input {
				w := newWorld(pool("p", budgets(nsv1.Budget{Nodes: "1"})))
				w.node("p", "small", "zone-a", od)
				w.node("p", "small", "zone-a", od)
				w.node("p", "small", "zone-a", od)
				return w.input()
			},
			want:      []string{"Emptiness[p-01]"},
			wantSkips: map[string]SkipReason{"p-02": SkipBudget, "p-03": SkipBudget},
		},
		{
			name: "nodes being deleted count against the budget",
			build: func() Input {
				w := newWorld(pool("p", budgets(nsv1.Budget{Nodes: "1"})))
				w.node("p", "small", "zone-a", od, deleting)
				w.node("p", "small", "zone-a", od)
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-02": SkipBudget},
		},
		{
			name: "a replacement in flight does not raise a percentage budget",
			build: func() Input {
				w := newWorld(pool("p", budgets(nsv1.Budget{Nodes: "10%"})))
				w.node("p", "large", "zone-a", od, claimAnnotation(nsv1.AnnotationDisruptionCommand, "cmd-1"))
				w.pod("p-01", "1")
				w.node("p", "small", "zone-a", od, claimAnnotation(nsv1.AnnotationReplacementFor, "cmd-1"),
					func(c *nsv1.NodeClaim, _ *corev1.Node) { c.Status.Conditions = nil })
				for range 8 {
					w.pod(w.node("p", "small", "zone-a", od), "1500m")
				}
				w.node("p", "small", "zone-a", od) // p-20, empty
				return w.input()
			},
			// 10 % of the 10 nodes is 1, taken by p-01; counting the
			// launching replacement would make it 10 % of 11, rounded up
			// to 2, and delete p-20 while p-01 is still being replaced.
			wantSkips: map[string]SkipReason{"p-20": SkipBudget},
		},
		{
			name: "a node that is not Ready holds the budget",
			build: func() Input {
				w := newWorld(pool("p", budgets(nsv1.Budget{Nodes: "1"})))
				w.node("p", "small", "zone-a", od, func(_ *nsv1.NodeClaim, n *corev1.Node) {
					n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}
				})
				w.pod("p-01", "1500m")
				w.node("p", "small", "zone-a", od, func(_ *nsv1.NodeClaim, n *corev1.Node) {
					n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
				})
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-03": SkipBudget},
		},
		{
			name: "a budget for one reason does not hold another",
			build: func() Input {
				w := newWorld(pool("p", budgets(nsv1.Budget{Nodes: "0", Reasons: []nsv1.DisruptionReason{nsv1.DisruptionReasonEmpty}})))
				w.node("p", "small", "zone-a", od)
				w.node("p", "small", "zone-a", od, createdAgo(800*time.Hour))
				w.pod("p-02", "1500m")
				return w.input()
			},
			// The expired node's pod moves onto the empty node the Empty
			// budget keeps, which then is no longer empty.
			want: []string{"Expiration[p-02]"},
		},
		{
			name: "a replacement of a command in progress is left alone",
			build: func() Input {
				w := newWorld(pool("p"))
				w.node("p", "large", "zone-a", od, claimAnnotation(nsv1.AnnotationDisruptionCommand, "cmd-1"))
				w.pod("p-01", "1")
				w.node("p", "small", "zone-a", od, claimAnnotation(nsv1.AnnotationReplacementFor, "cmd-1"))
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-03": SkipReplacementInProgress},
		},
		{
			name: "an uninitialized node is not a candidate",
			build: func() Input {
				w := newWorld(pool("p"))
				w.node("p", "large", "zone-a", od, func(c *nsv1.NodeClaim, _ *corev1.Node) { c.Status.Conditions = nil })
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipNotInitialized},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.build()
			plan, err := Compute(in)
			if err != nil {
				t.Fatal(err)
			}
			got := summaries(plan)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("actions %v, want %v\nskips: %+v", got, tt.want, plan.Skipped)
			}
			skips := map[string]Skip{}
			for _, s := range plan.Skipped {
				skips[s.Node] = s
				if s.Message == "" {
					t.Errorf("skip of %s has no message", s.Node)
				}
			}
			for node, reason := range tt.wantSkips {
				if skips[node].Reason != reason {
					t.Errorf("skip of %s = %q (%s), want %s", node, skips[node].Reason, skips[node].Message, reason)
				}
			}
			for _, a := range plan.Actions {
				if a.Message == "" {
					t.Errorf("action %s has no message", summary(a))
				}
				if _, ok := skips[a.Candidates[0].Node.Name]; ok {
					t.Errorf("node %s is both acted on and skipped", a.Candidates[0].Node.Name)
				}
			}
			if tt.checkAction != nil && len(plan.Actions) > 0 {
				tt.checkAction(t, plan.Actions[0])
			}
			// Deterministic: the same input gives the same plan.
			again, err := Compute(tt.build())
			if err != nil {
				t.Fatal(err)
			}
			if g := summaries(again); strings.Join(g, ",") != strings.Join(got, ",") {
				t.Errorf("second plan %v differs from %v", g, got)
			}
		})
	}
}

// spotCatalog is n small spot types (1 cpu, $0.01·(i+1)/h) and one big
// type (8 cpu, $0.50/h spot), spot and on-demand in both zones.
func spotCatalog(n int) []*catalog.InstanceType {
	out := []*catalog.InstanceType{itype("big-00", 8, 1.0, 0.50)}
	for i := 0; i < n; i++ {
		out = append(out, itype(fmt.Sprintf("small-%02d", i), 1, 0.20, 0.01*float64(i+1)))
	}
	return out
}

// forcedExpiry checks an action is a forced expiry.
func forcedExpiry(t *testing.T, a *Action) {
	t.Helper()
	if a.Method != MethodExpiration || a.Reason != nsv1.DisruptionReasonExpired || !a.Forced {
		t.Errorf("action %s: method %s, reason %s, forced %v; want a forced Expiration", summary(a), a.Method, a.Reason, a.Forced)
	}
}
