package disruptor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/disruption"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

func mustSnapshot(t *testing.T, f *fixture) *state.Snapshot {
	t.Helper()
	snap, err := f.c.cluster.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestEmptyNodeIsDeletedAfterValidation(t *testing.T) {
	f := newFixture(t, nil)
	n := f.node("large", nil)
	if wait := f.step(); wait != DefaultValidationDelay {
		t.Fatalf("first step waits %v, want the validation delay", wait)
	}
	if f.deleting(n) {
		t.Fatal("deleted before validation")
	}
	f.clk.Step(DefaultValidationDelay)
	f.step()
	if !f.deleting(n) {
		t.Fatal("the empty node was not deleted after validation")
	}
	if got := testutil.ToFloat64(f.m.Disruption.Decisions.WithLabelValues("Emptiness", "Empty", "delete")); got != 1 {
		t.Errorf("decisions metric %v, want 1", got)
	}
	if ev := f.events(); !strings.Contains(ev, "Normal Empty") || !strings.Contains(ev, n) {
		t.Errorf("no Empty event for %s in:\n%s", n, ev)
	}
}

func TestValidationFailsWhenAPodArrives(t *testing.T) {
	f := newFixture(t, nil)
	n := f.node("small", nil)
	f.step()
	f.pod(n, "1")
	f.clk.Step(DefaultValidationDelay)
	f.step()
	if f.deleting(n) {
		t.Fatal("a node that got a pod during validation was deleted")
	}
	if got := testutil.ToFloat64(f.m.Disruption.ValidationFailures.WithLabelValues("Emptiness")); got != 1 {
		t.Errorf("validation failures %v, want 1", got)
	}
}

// A node that becomes a candidate while a plan waits does not hold back
// what that plan validated: the validated action is carried out, the new
// one waits for its own validation from then on.
func TestValidationCarriesOutWhatStillHoldsAndValidatesTheRest(t *testing.T) {
	f := newFixture(t, nil)
	first := f.node("small", nil)
	if wait := f.step(); wait != DefaultValidationDelay {
		t.Fatalf("first step waits %v, want the validation delay", wait)
	}
	second := f.node("small", nil)
	f.clk.Step(DefaultValidationDelay)
	f.step()
	if !f.deleting(first) {
		t.Fatal("the validated empty node was not deleted when another became a candidate")
	}
	if f.deleting(second) {
		t.Fatal("a node planned only at validation time was deleted without its own validation")
	}
	if got := testutil.ToFloat64(f.m.Disruption.ValidationFailures.WithLabelValues("Emptiness")); got != 0 {
		t.Errorf("validation failures %v, want 0", got)
	}
	f.settle()
	f.clk.Step(DefaultValidationDelay - time.Second)
	f.step()
	if f.deleting(second) {
		t.Fatal("the second node was deleted before its validation delay")
	}
	f.clk.Step(time.Second)
	f.step()
	if !f.deleting(second) {
		t.Fatal("the second node was not deleted after its own validation")
	}
}

func TestConsolidateAfterCountsFromTheLastPodEvent(t *testing.T) {
	f := newFixture(t, func(p *nsv1.NodePool) { p.Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration("5m") })
	n := f.node("large", func(c *nsv1.NodeClaim) { c.Status.LastPodEventTime = metav1.NewTime(f.clk.Now().Add(-time.Minute)) })
	if wait := f.step(); wait != DefaultPollInterval {
		t.Fatalf("a node emptied a minute ago was planned (wait %v)", wait)
	}
	f.clk.Step(4 * time.Minute)
	if wait := f.step(); wait != DefaultValidationDelay {
		t.Fatalf("after consolidateAfter no plan (wait %v)", wait)
	}
	f.clk.Step(DefaultValidationDelay)
	f.step()
	if !f.deleting(n) {
		t.Fatal("not deleted after consolidateAfter and validation")
	}
}

func TestBudgetCountsNodesBeingDeleted(t *testing.T) {
	f := newFixture(t, func(p *nsv1.NodePool) { p.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "1"}} })
	names := []string{f.node("small", nil), f.node("small", nil), f.node("small", nil)}
	for i := 0; i < 4; i++ {
		f.step()
		f.clk.Step(DefaultValidationDelay)
		f.settle()
	}
	deleting := 0
	for _, n := range names {
		if f.deleting(n) {
			deleting++
		}
	}
	if deleting != 1 {
		t.Fatalf("%d nodes deleting, the budget allows 1", deleting)
	}
	if got := testutil.ToFloat64(f.m.Disruption.Allowed.WithLabelValues(f.pool.Name, "Empty")); got != 0 {
		t.Errorf("allowance metric %v, want 0 while one node drains", got)
	}
	// The last plan saw the two empty nodes left as candidates (the one
	// draining is no candidate) and skipped both for the budget.
	if got := testutil.ToFloat64(f.m.Disruption.Candidates.WithLabelValues("Empty")); got != 2 {
		t.Errorf("candidates metric for Empty %v, want 2", got)
	}
	if got := testutil.ToFloat64(f.m.Disruption.Skipped.WithLabelValues(string(disruption.SkipBudget))); got != 2 {
		t.Errorf("skipped metric for %s %v, want 2", disruption.SkipBudget, got)
	}
}

// startReplacement plans a large on-demand node running one small pod: the
// plan replaces it with one cheaper node (spot small), launched first.
func startReplacement(t *testing.T) (*fixture, string, *nsv1.NodeClaim) {
	f := newFixture(t, nil)
	n := f.node("large", nil)
	f.pod(n, "500m")
	f.step()
	f.clk.Step(DefaultValidationDelay)
	f.step()
	cand := f.claim(n)
	if !cand.DeletionTimestamp.IsZero() {
		t.Fatal("the candidate was deleted before its replacement initialized")
	}
	cmd := cand.Annotations[nsv1.AnnotationDisruptionCommand]
	if cmd == "" || cand.Annotations[nsv1.AnnotationDisruptionReason] != "Underutilized" {
		t.Fatalf("candidate not marked: %v", cand.Annotations)
	}
	var repl *nsv1.NodeClaim
	for _, c := range f.claimsOfPool() {
		if c.Annotations[nsv1.AnnotationReplacementFor] == cmd {
			c := c
			repl = &c
		}
	}
	if repl == nil || cand.Annotations[nsv1.AnnotationDisruptionReplacements] != repl.Name {
		t.Fatalf("no replacement claim for command %s (candidate lists %q)", cmd, cand.Annotations[nsv1.AnnotationDisruptionReplacements])
	}
	node := &corev1.Node{}
	if err := h.Direct.Get(context.Background(), client.ObjectKey{Name: n}, node); err != nil {
		t.Fatal(err)
	}
	if !tainted(node) {
		t.Fatalf("candidate node not tainted: %v", node.Spec.Taints)
	}
	// Every option must save 10 %: small and large as spot ($0.03, $0.12),
	// never on-demand (large $0.40 is the node itself, small $0.10 is not
	// the cheapest capacity type the solver picked).
	reqs := map[string][]string{}
	for _, r := range repl.Spec.Requirements {
		reqs[r.Key] = r.Values
	}
	if got := reqs[nsv1.LabelCapacityType]; len(got) != 1 || got[0] != nsv1.CapacityTypeSpot {
		t.Errorf("replacement capacity types %v, want spot", got)
	}
	if got := strings.Join(reqs[corev1.LabelInstanceTypeStable], ","); got != "large,small" {
		t.Errorf("replacement types %s, want large,small", got)
	}
	if len(repl.OwnerReferences) != 1 || repl.OwnerReferences[0].Name != f.pool.Name || repl.Annotations[nsv1.AnnotationNodePoolHash] != f.pool.Hash() {
		t.Errorf("replacement is not a claim of its pool: %+v %v", repl.OwnerReferences, repl.Annotations)
	}
	f.settle()
	return f, n, repl
}

func tainted(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.MatchTaint(&nsv1.DisruptedTaint) {
			return true
		}
	}
	return false
}

func TestReplacementInitializesBeforeTheCandidateGoes(t *testing.T) {
	f, n, repl := startReplacement(t)
	// The replacement launches (not yet initialized): the candidate waits.
	f.clk.Step(time.Minute)
	f.step()
	if f.deleting(n) {
		t.Fatal("deleted while the replacement is not initialized")
	}
	// It registers and initializes, as the NodeClaim controller would have
	// it: a node of its own, empty until the candidate drains.
	node := controllertest.Node(repl.Name, "fake:///zone-a/"+repl.Name, "2")
	node.Labels[nsv1.LabelNodePool] = f.pool.Name
	if err := h.Direct.Create(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	f.nodes = append(f.nodes, node.Name)
	repl.Status.NodeName, repl.Status.ProviderID = node.Name, node.Spec.ProviderID
	repl.Status.InstanceType, repl.Status.Zone, repl.Status.CapacityType = "small", "zone-a", nsv1.CapacityTypeSpot
	lifecycle.SetCondition(&repl.Status.Conditions, lifecycle.Condition(nsv1.ConditionInitialized, true, "", ""), 1, metav1.NewTime(f.clk.Now()))
	if err := h.Direct.Status().Update(context.Background(), repl); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, repl)
	h.Cached(t, node)
	f.step()
	if !f.deleting(n) {
		t.Fatal("the candidate was not deleted once its replacement initialized")
	}
	if got := testutil.ToFloat64(f.m.Disruption.Decisions.WithLabelValues("SingleNodeConsolidation", "Underutilized", "replace")); got != 1 {
		t.Errorf("decisions metric %v, want 1", got)
	}
	if got := testutil.ToFloat64(f.m.Disruption.Savings.WithLabelValues("Underutilized")); got < 0.36 {
		t.Errorf("savings %v, want about $0.37/h", got)
	}
	// The replacement is not a candidate while the node it replaces drains:
	// the plan skips it, and says why.
	f.settle()
	f.clk.Step(time.Minute)
	in, err := f.c.gather(context.Background(), mustSnapshot(t, f), f.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := disruption.Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	skipped := false
	for _, s := range plan.Skipped {
		skipped = skipped || (s.Claim == repl.Name && s.Reason == disruption.SkipReplacementInProgress)
	}
	if !skipped || len(plan.Actions) != 0 {
		t.Fatalf("the empty replacement is not held while the node it replaces drains: actions %d, skips %+v", len(plan.Actions), plan.Skipped)
	}
	f.step()
	f.clk.Step(DefaultValidationDelay)
	f.step()
	if f.deleting(repl.Name) {
		t.Fatal("the empty replacement was removed while the node it replaces drains")
	}
}

func TestAReplacementThatFailsAbortsTheDisruption(t *testing.T) {
	f, n, repl := startReplacement(t)
	if err := h.Direct.Delete(context.Background(), repl); err != nil {
		t.Fatal(err)
	}
	f.settle()
	f.step()
	cand := f.claim(n)
	if !cand.DeletionTimestamp.IsZero() || cand.Annotations[nsv1.AnnotationDisruptionCommand] != "" {
		t.Fatalf("candidate after abort: deleting=%v annotations %v", !cand.DeletionTimestamp.IsZero(), cand.Annotations)
	}
	node := &corev1.Node{}
	if err := h.Direct.Get(context.Background(), client.ObjectKey{Name: n}, node); err != nil {
		t.Fatal(err)
	}
	if tainted(node) {
		t.Fatal("the candidate node kept the disrupted taint")
	}
	if got := testutil.ToFloat64(f.m.Disruption.Aborted.WithLabelValues("Underutilized")); got != 1 {
		t.Errorf("aborted metric %v, want 1", got)
	}
	if ev := f.events(); !strings.Contains(ev, "DisruptionAborted") {
		t.Errorf("no DisruptionAborted event in:\n%s", ev)
	}
}

func TestANewAMIReplacesTheNode(t *testing.T) {
	class := nodeClass(uniq("class"), "ami-new")
	status := class.Status
	if err := h.Direct.Create(context.Background(), class); err != nil {
		t.Fatal(err)
	}
	class.Status = status
	if err := h.Direct.Status().Update(context.Background(), class); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, class)
	t.Cleanup(func() { _ = h.Direct.Delete(context.Background(), class) })
	f := newFixture(t, func(p *nsv1.NodePool) {
		p.Spec.Template.Spec.NodeClassRef.Name = class.Name
		p.Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration("Never")
	})
	n := f.node("small", nil) // runs ami-old
	f.pod(n, "1500m")
	f.step()
	f.clk.Step(DefaultValidationDelay)
	f.step()
	cand := f.claim(n)
	if cand.Annotations[nsv1.AnnotationDisruptionReason] != "Drifted" || cand.Annotations[nsv1.AnnotationDisruptionReplacements] == "" {
		t.Fatalf("drifted node not being replaced: %v", cand.Annotations)
	}
	if ev := f.events(); !strings.Contains(ev, "ami-old") {
		t.Errorf("no event naming the old image in:\n%s", ev)
	}
}

func TestAReplacementThatNeverInitializesTimesOut(t *testing.T) {
	f, n, repl := startReplacement(t)
	f.clk.Step(DefaultCommandTimeout)
	f.step()
	if cand := f.claim(n); !cand.DeletionTimestamp.IsZero() || cand.Annotations[nsv1.AnnotationDisruptionCommand] != "" {
		t.Fatalf("candidate after the timeout: deleting=%v annotations %v", !cand.DeletionTimestamp.IsZero(), cand.Annotations)
	}
	if !f.deleting(repl.Name) {
		t.Fatal("the replacement that never initialized was left running")
	}
}

func TestValidated(t *testing.T) {
	claim := func(name string) *disruption.Candidate {
		return &disruption.Candidate{Claim: &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}}
	}
	act := func(m disruption.Method, repl int, names ...string) *disruption.Action {
		a := &disruption.Action{Method: m, Reason: nsv1.DisruptionReasonUnderutilized}
		for _, n := range names {
			a.Candidates = append(a.Candidates, claim(n))
		}
		for i := 0; i < repl; i++ {
			a.Replacements = append(a.Replacements, nil)
		}
		return a
	}
	drift := func(names ...string) *disruption.Action {
		a := act(disruption.MethodDrift, 1, names...)
		a.Reason = nsv1.DisruptionReasonDrifted
		return a
	}
	expire := func(names ...string) *disruption.Action {
		a := act(disruption.MethodExpiration, 1, names...)
		a.Reason = nsv1.DisruptionReasonExpired
		return a
	}
	keys := func(as []*disruption.Action) string {
		var out []string
		for _, a := range as {
			out = append(out, key(a))
		}
		return strings.Join(out, " ")
	}
	multi, single := disruption.MethodMultiNodeConsolidation, disruption.MethodSingleNodeConsolidation
	tests := []struct {
		name                string
		before, after       []*disruption.Action
		carry, failed, rest []*disruption.Action
	}{
		{name: "same plan", before: []*disruption.Action{act(multi, 1, "a", "b"), act(single, 0, "c")},
			after: []*disruption.Action{act(multi, 1, "b", "a"), act(single, 0, "c")},
			carry: []*disruption.Action{act(multi, 1, "a", "b"), act(single, 0, "c")}},
		{name: "a later action changed", before: []*disruption.Action{act(multi, 1, "a", "b"), act(single, 0, "c")},
			after: []*disruption.Action{act(multi, 1, "a", "b"), act(single, 1, "c")},
			carry: []*disruption.Action{act(multi, 1, "a", "b")}, failed: []*disruption.Action{act(single, 0, "c")},
			rest: []*disruption.Action{act(single, 1, "c")}},
		{name: "the first changed: what the new plan still has after it holds", before: []*disruption.Action{act(multi, 1, "a", "b"), act(single, 0, "c")},
			after: []*disruption.Action{act(multi, 1, "a"), act(single, 0, "c")},
			carry: []*disruption.Action{act(single, 0, "c")}, failed: []*disruption.Action{act(multi, 1, "a", "b")},
			rest: []*disruption.Action{act(multi, 1, "a")}},
		{name: "drift found during validation does not hold back an expiry (the lab's roll)", before: []*disruption.Action{expire("e")},
			after: []*disruption.Action{drift("x"), drift("y"), expire("e")},
			carry: []*disruption.Action{expire("e")}, rest: []*disruption.Action{drift("x"), drift("y")}},
		{name: "nothing left to do", before: []*disruption.Action{act(single, 0, "c")}, failed: []*disruption.Action{act(single, 0, "c")}},
	}
	for _, tt := range tests {
		carry, failed, rest := validated(tt.before, tt.after)
		if keys(carry) != keys(tt.carry) || keys(failed) != keys(tt.failed) || keys(rest) != keys(tt.rest) {
			t.Errorf("%s: carry %q failed %q rest %q, want %q %q %q", tt.name,
				keys(carry), keys(failed), keys(rest), keys(tt.carry), keys(tt.failed), keys(tt.rest))
		}
	}
}

// Expiry is forceful (Karpenter v1): an expired node is replaced and
// deleted in the same step — no validation wait, no budget (zero here), no
// do-not-disrupt pod holds it — and its replacement is launched with it.
func TestExpiryIsForcedPastBudgetAndDoNotDisrupt(t *testing.T) {
	f := newFixture(t, func(p *nsv1.NodePool) { p.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "0"}} })
	n := f.node("large", func(c *nsv1.NodeClaim) { c.Spec.ExpireAfter = nsv1.MustParseNillableDuration("1m") })
	f.clk.Step(2 * time.Minute)
	p := f.pod(n, "6")
	base := p.DeepCopy()
	p.Annotations = map[string]string{nsv1.AnnotationDoNotDisrupt: "true"}
	if err := h.Direct.Patch(context.Background(), p, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, p)
	f.step()
	if !f.deleting(n) {
		t.Fatal("an expired node was not deleted at once (budget 0, a do-not-disrupt pod)")
	}
	claim := f.claim(n)
	cmd := claim.Annotations[nsv1.AnnotationDisruptionCommand]
	if cmd == "" || claim.Annotations[nsv1.AnnotationDisruptionReason] != string(nsv1.DisruptionReasonExpired) {
		t.Fatalf("the expired claim carries no Expired command: %v", claim.Annotations)
	}
	var repl *nsv1.NodeClaim
	for _, c := range f.claimsOfPool() {
		if c.Annotations[nsv1.AnnotationReplacementFor] == cmd {
			repl = c.DeepCopy()
		}
	}
	if repl == nil {
		t.Fatalf("no replacement launched with the expiry (command %s)", cmd)
	}
	if got := testutil.ToFloat64(f.m.Disruption.Decisions.WithLabelValues("Expiration", "Expired", "replace")); got != 1 {
		t.Errorf("decisions metric %v, want 1", got)
	}
	if ev := f.events(); !strings.Contains(ev, "Expired") || !strings.Contains(ev, n) {
		t.Errorf("no Expired event for %s in:\n%s", n, ev)
	}
}
