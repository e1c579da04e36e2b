package simulator

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/examples/scenarios"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	interruptionpolicy "github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func loadExample(t testing.TB, name string) *scenario.Scenario {
	t.Helper()
	b, err := scenarios.FS.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// runCached runs a built-in scenario once per test binary: runs are
// deterministic, so the golden test and a scenario's own test share one.
func runCached(t testing.TB, name string) *output.Result {
	t.Helper()
	cachedMu.Lock()
	defer cachedMu.Unlock()
	if res, ok := cached[name]; ok {
		return res
	}
	res := run(t, loadExample(t, name))
	cached[name] = res
	return res
}

var (
	cachedMu sync.Mutex
	cached   = map[string]*output.Result{}
)

func run(t testing.TB, sc *scenario.Scenario) *output.Result {
	t.Helper()
	res, err := Run(context.Background(), sc, Options{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// within fails unless got is in [lo, hi].
func within[T int | float64 | time.Duration](t *testing.T, what string, got, lo, hi T) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %v, want within [%v, %v]", what, got, lo, hi)
	}
}

func reachedWithin(t *testing.T, what string, m output.Milestone, lo, hi time.Duration) {
	t.Helper()
	if !m.Reached {
		t.Errorf("%s never reached", what)
		return
	}
	within(t, what, m.At, lo, hi)
}

// launchesAllowed checks that every launch is one the pool's requirements allow.
func launchesAllowed(t *testing.T, sc *scenario.Scenario, res *output.Result) {
	t.Helper()
	cat, err := catalog.Load(catalog.Options{Zones: sc.World.Zones})
	if err != nil {
		t.Fatal(err)
	}
	reqs := map[string]scheduling.Requirements{}
	for _, np := range sc.NodePools {
		reqs[np.Name] = scheduling.FromAPI(np.Spec.Template.Spec.Requirements)
	}
	for _, l := range res.Launches {
		it, ok := cat.Get(l.InstanceType)
		if !ok {
			t.Errorf("%s: unknown type %s", l.NodeClaim, l.InstanceType)
			continue
		}
		labels := it.LabelsFor(catalog.Offering{Zone: l.Zone, CapacityType: l.CapacityType})
		if !reqs[l.Pool].Matches(labels) {
			t.Errorf("%s: %s %s in %s is outside pool %s's requirements", l.NodeClaim, l.CapacityType, l.InstanceType, l.Zone, l.Pool)
		}
	}
}

// nearCheapest checks that the first wave of launches costs at most factor
// times the lower bound: the pods' vCPUs bought at the cheapest spot price
// per vCPU the first pool allows. Whole nodes, kubelet overhead and
// DaemonSets make some excess unavoidable; an on-demand or badly sized
// choice lands far above it.
func nearCheapest(t *testing.T, sc *scenario.Scenario, res *output.Result, podVCPU, factor float64) {
	t.Helper()
	cat, err := catalog.Load(catalog.Options{Zones: sc.World.Zones})
	if err != nil {
		t.Fatal(err)
	}
	reqs := scheduling.FromAPI(sc.NodePools[0].Spec.Template.Spec.Requirements)
	best := 0.0
	for _, it := range cat.Types() {
		for _, o := range it.Offerings {
			if o.CapacityType == "spot" && reqs.Matches(it.LabelsFor(o)) {
				if v := o.Price / float64(it.VCPU); best == 0 || v < best {
					best = v
				}
			}
		}
	}
	paid := 0.0
	for _, l := range res.Launches {
		if l.LaunchedAt < time.Minute {
			paid += l.Price
		}
	}
	if bound := best * podVCPU; paid > factor*bound {
		t.Errorf("first wave costs $%.4f/h, more than %.1f× the lower bound $%.4f/h", paid, factor, bound)
	}
}

// The default scenario's key figures, with tolerances wide enough for a
// better solver or provider to move them a little and narrow enough to
// catch a broken seam.
func TestDefaultScenario(t *testing.T) {
	sc := loadExample(t, scenarios.Default)
	res := run(t, sc)

	within(t, "nodes launched", len(res.Launches), 2, 10)
	launchesAllowed(t, sc, res)
	within(t, "distinct instance types", len(res.InstanceTypes()), 1, 4)
	nearCheapest(t, sc, res, 20*0.5, 1.6)
	for _, l := range res.Launches {
		if l.CapacityType != "spot" {
			t.Errorf("%s launched %s, want spot only", l.NodeClaim, l.CapacityType)
		}
		if l.Reason != "empty" && l.Reason != "underutilized" {
			t.Errorf("%s went away for %q, want every node removed by the disruption controller as empty or underutilized", l.NodeClaim, l.Reason)
		}
	}
	// KEDA's maximum of 20, plus the workers a consolidation moved while
	// the queue drained.
	within(t, "pods created", res.PodsCreated, 20, 22)
	// batch window (1s idle) + boot 40s + pod start 2s.
	reachedWithin(t, "first pod running", res.FirstPodRunning, 42*time.Second, 45*time.Second)
	reachedWithin(t, "all pods running", res.AllPodsRunning, 42*time.Second, 60*time.Second)
	// 1,000 messages × 5s / 20 workers = 250s of work after the pods start,
	// plus the slower tail as KEDA scales down with the in-flight count.
	reachedWithin(t, "queue empty", res.QueueEmpty, 5*time.Minute, 8*time.Minute)
	// Queue empty + cooldown 120s + consolidateAfter 30s + one node per
	// budget step.
	reachedWithin(t, "back to base", res.BackToBase, 8*time.Minute, 12*time.Minute)
	within(t, "cost (USD)", res.Cost, 0.005, 0.03)
	if res.Cost > 0.5*res.OnDemandCost {
		t.Errorf("cost $%.4f is more than half the on-demand $%.4f: spot should save more", res.Cost, res.OnDemandCost)
	}
	last := res.Samples[len(res.Samples)-1]
	if last.NodesSpot != 0 || last.NodesOnDemand != 2 || last.RunningPods != 0 || last.QueueVisible+last.QueueInFlight != 0 {
		t.Errorf("last sample = %+v, want only the 2 system nodes and nothing running", last)
	}
	if got, want := len(res.Samples), int(sc.Duration.Duration/sc.SampleInterval.Duration)+1; got != want {
		t.Errorf("samples = %d, want %d", got, want)
	}
}

func TestDeterministic(t *testing.T) {
	sc := loadExample(t, scenarios.Default)
	csv := func() []byte {
		var b bytes.Buffer
		if err := output.WriteCSV(&b, run(t, sc).Samples); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	first, second := csv(), csv()
	if !bytes.Equal(first, second) {
		t.Fatal("two runs of the same scenario and seed wrote different timelines")
	}
}

// Every spot pool is out of capacity for three minutes: the first burst's
// spot launches fail, the ICE cache hides those offerings and the re-plan
// buys on-demand; the second burst, after the crunch and the cache's TTL,
// lands on spot again.
func TestICEWindow(t *testing.T) {
	sc := loadExample(t, "ice-window.yaml")
	res := run(t, sc)
	launchesAllowed(t, sc, res)
	if res.LaunchFailures["insufficient capacity"] == 0 {
		t.Error("no launch failed for insufficient capacity during the ICE window")
	}
	var early, late int
	for _, l := range res.Launches {
		switch {
		case l.LaunchedAt < 3*time.Minute:
			early++
			if l.CapacityType != "on-demand" {
				t.Errorf("%s launched %s at %s, during the spot ICE window", l.NodeClaim, l.CapacityType, l.LaunchedAt)
			}
		case l.LaunchedAt >= 12*time.Minute:
			late++
			if l.CapacityType != "spot" {
				t.Errorf("%s launched %s at %s, after spot came back", l.NodeClaim, l.CapacityType, l.LaunchedAt)
			}
		}
	}
	if early == 0 || late == 0 {
		t.Errorf("launches during the window = %d, after = %d; want both", early, late)
	}
	reachedWithin(t, "first pod running", res.FirstPodRunning, 43*time.Second, 3*time.Minute)
	reachedWithin(t, "queue empty (first burst)", res.QueueEmpty, 5*time.Minute, 9*time.Minute)
	reachedWithin(t, "back to base", res.BackToBase, 15*time.Minute, 24*time.Minute)
}

// Without an interruption handler nothing drains on the notice: the two
// instances vanish two minutes later with their pods, and the replacements
// need new nodes.
// Two spot nodes get the two-minute notice at t=2m. The interruption
// handler plans their pods elsewhere at once, the replacements launch at
// the notice, the nodes are drained as soon as the replacements are Ready
// (40s boots) and terminated before the deadline; no pod waits Pending.
func TestSpotInterruption(t *testing.T) {
	sc := loadExample(t, "spot-interruption.yaml")
	res := runCached(t, "spot-interruption.yaml")
	launchesAllowed(t, sc, res)
	interrupted, replacements := 0, 0
	for _, l := range res.Launches {
		if l.Reason == "spot interruption" {
			interrupted++
			within(t, l.NodeClaim+" terminated at", l.TerminatedAt, 2*time.Minute+40*time.Second, 4*time.Minute-time.Second)
		}
		if l.LaunchedAt >= 2*time.Minute && l.LaunchedAt <= 2*time.Minute+2*time.Second {
			replacements++
		}
	}
	if interrupted != 2 {
		t.Errorf("interrupted nodes = %d, want 2", interrupted)
	}
	if replacements == 0 {
		t.Error("no replacement launched at the notice")
	}
	for _, smp := range res.Samples {
		if smp.T >= 2*time.Minute && smp.T <= 5*time.Minute && smp.PendingPods > 0 {
			t.Errorf("t=%s: %d pods pending although the replacements were ready before the deadline", smp.T, smp.PendingPods)
			break
		}
	}
	reachedWithin(t, "queue empty", res.QueueEmpty, 5*time.Minute, 8*time.Minute)
	// The report pairs each notice with its replacement: new capacity
	// launched at the notice, Ready before the drain, and no pod left the
	// node before its place was ready. The ReplacementPlanned Event that
	// dates the plan comes at the handler's next look at the claim, within
	// its recheck interval of the launch.
	spot := 0
	for _, in := range res.Interruptions {
		if in.Kind != "spot interruption" {
			continue
		}
		spot++
		ready := in.ReplacementReady()
		launchedAtNotice := false
		for _, r := range in.Replacements {
			launchedAtNotice = launchedAtNotice || (r.NewNode && r.Launched.Reached && r.Launched.At == in.At)
		}
		if in.Pods == 0 || !in.Planned.Reached || in.Planned.At > in.At+interruptionpolicy.Recheck || !launchedAtNotice || !ready.Reached ||
			!in.Drained.Reached || in.Drained.At < ready.At || in.Stranded != 0 || !in.Gone.Reached || in.Gone.At >= in.Deadline.At {
			t.Errorf("notice about %s: %d pods, planned %s on %+v, ready %s, drained %s, gone %s (deadline %s), %d stranded",
				in.NodeClaim, in.Pods, in.Planned, in.Replacements, ready, in.Drained, in.Gone, in.Deadline, in.Stranded)
		}
	}
	if spot != 2 {
		t.Errorf("the report lists %d spot interruption notices, want 2", spot)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"SpotInterruption nodeclaim", "ReplacementPlanned nodeclaim", "InterruptionDrain nodeclaim"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the report does not list %q", want)
		}
	}
}

// Without the handler the same notices take the nodes with their pods at
// the deadline, and the pods wait Pending for new capacity: the contrast
// the handler exists for.
func TestSpotInterruptionUnhandled(t *testing.T) {
	sc := loadExample(t, "spot-interruption.yaml")
	off := false
	sc.Controller.InterruptionHandling = &off
	res := run(t, sc)
	pendingAfter := 0
	for _, smp := range res.Samples {
		if smp.T > 4*time.Minute && smp.T < 6*time.Minute {
			pendingAfter = max(pendingAfter, smp.PendingPods)
		}
	}
	if pendingAfter == 0 {
		t.Error("no pod waited after the instances went away without a handler")
	}
	for _, l := range res.Launches {
		if l.Reason == "spot interruption" && l.TerminatedAt != 4*time.Minute {
			t.Errorf("%s went at %s, want at the end of the notice (4m)", l.NodeClaim, l.TerminatedAt)
		}
	}
}

// Two waves of six spot notices on a fleet of about a dozen nodes: after
// each wave no more pods wait Pending than the wave's notices stranded
// (pods that left a node before a ready place waited for them), and every
// notice is paired with capacity launched at it and drained before its
// deadline.
func TestInterruptionWaves(t *testing.T) {
	sc := loadExample(t, "interruption-waves.yaml")
	res := runCached(t, "interruption-waves.yaml")
	launchesAllowed(t, sc, res)
	stranded := map[time.Duration]int{}
	notices := map[time.Duration]int{}
	for _, in := range res.Interruptions {
		if in.Kind != "spot interruption" {
			continue
		}
		notices[in.At]++
		stranded[in.At] += in.Stranded
		launched := false
		for _, r := range in.Replacements {
			launched = launched || (r.NewNode && r.Launched.Reached && r.Launched.At-in.At <= 2*time.Second)
		}
		if !launched || !in.Drained.Reached || in.Drained.At >= in.Deadline.At {
			var at []time.Duration
			for _, r := range in.Replacements {
				at = append(at, r.Launched.At-in.At)
			}
			t.Errorf("notice about %s at %s: replacements %+v launched %v after it, drained %s (deadline %s)", in.NodeClaim, output.FormatDuration(in.At), in.Replacements, at, in.Drained, in.Deadline)
		}
	}
	for _, wave := range []time.Duration{4 * time.Minute, 8 * time.Minute} {
		if notices[wave] != 6 {
			t.Errorf("wave at %s: %d notices about Nodesmith nodes, want 6", wave, notices[wave])
		}
		pending := 0
		for _, smp := range res.Samples {
			if smp.T >= wave && smp.T < wave+fakeaws.InterruptionNotice {
				pending = max(pending, smp.PendingPods)
			}
		}
		if pending > stranded[wave] {
			t.Errorf("wave at %s: up to %d pods Pending in the two minutes after it, more than the %d its notices stranded", wave, pending, stranded[wave])
		}
	}
}

func TestSeedOverride(t *testing.T) {
	sc := loadExample(t, scenarios.Default)
	seed := int64(99)
	res, err := Run(context.Background(), sc, Options{Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	if res.Seed != 99 {
		t.Errorf("seed = %d, want the override 99", res.Seed)
	}
}

func benchScenario(b *testing.B) *scenario.Scenario {
	raw, err := os.ReadFile("testdata/10k-pods.yaml")
	if err != nil {
		b.Fatal(err)
	}
	sc, err := scenario.Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	return sc
}

// BenchmarkSimulate10kPods is the scale target: 10,000 pods over one hour of
// virtual time must simulate in well under 10 s.
func BenchmarkSimulate10kPods(b *testing.B) {
	sc := benchScenario(b)
	for b.Loop() {
		res, err := Run(context.Background(), sc, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if res.PodsCreated < 10000 {
			b.Fatalf("pods created = %d, want at least 10,000", res.PodsCreated)
		}
	}
}

// A boot slower than the one-minute nomination TTL sends the pods back to
// the provisioner while their nodes still boot; the in-flight claims must
// absorb them instead of a second launch.
func TestSlowBootDoesNotLaunchTwice(t *testing.T) {
	base := run(t, loadExample(t, scenarios.Default))
	sc := loadExample(t, scenarios.Default)
	sc.World.BootDelay.Duration = 90 * time.Second
	slow := run(t, sc)
	if len(slow.Launches) != len(base.Launches) {
		t.Errorf("launches with a 90s boot = %d, with 40s = %d; the expired nominations launched again", len(slow.Launches), len(base.Launches))
	}
	reachedWithin(t, "first pod running", slow.FirstPodRunning, 92*time.Second, 95*time.Second)
}

// An instance that never registers within the lifecycle's registration
// timeout (15 min) is deleted and its pods planned again.
func TestRegistrationTimeout(t *testing.T) {
	sc := loadExample(t, scenarios.Default)
	sc.World.BootDelay.Duration = 16 * time.Minute
	res := run(t, sc)
	timedOut := 0
	for _, l := range res.Launches {
		if l.Reason == "registration timeout" {
			timedOut++
			within(t, l.NodeClaim+" deleted at", l.TerminatedAt-l.LaunchedAt, 15*time.Minute, 15*time.Minute+time.Second)
		}
	}
	if timedOut == 0 {
		t.Fatalf("no claim timed out; launches: %+v", res.Launches)
	}
	if res.FirstPodRunning.Reached {
		t.Errorf("a pod ran at %s although no node could register", res.FirstPodRunning)
	}
}

// After 1,500 pods scale down to 150, consolidation brings the fleet within
// 10 % of what a fresh plan for the 150 pods costs, within the budget's
// pace, and never removes a node it launched less than 10 minutes before
// (no launch-then-remove churn).
func TestConsolidationScaleDown(t *testing.T) {
	sc := loadExample(t, "consolidation.yaml")
	res := runCached(t, "consolidation.yaml")
	launchesAllowed(t, sc, res)
	final := 0.0
	nodes := 0
	for _, l := range res.Launches {
		if !l.Terminated {
			final += l.Price
			nodes++
			continue
		}
		if life := l.TerminatedAt - l.LaunchedAt; life < 10*time.Minute {
			t.Errorf("%s (%s) launched at %s and gone at %s (%s): churn", l.NodeClaim, l.InstanceType, l.LaunchedAt, l.TerminatedAt, l.Reason)
		}
	}
	// A fresh plan for the pods left: the pool and the catalog the
	// simulated AWS sells from, no existing node.
	cat, err := catalog.Load(catalog.Options{Zones: sc.World.Zones})
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for _, d := range sc.Deployments {
		last := d.Replicas[len(d.Replicas)-1].Replicas
		for i := int32(0); i < last; i++ {
			p := &corev1.Pod{ObjectMeta: *d.Template.ObjectMeta.DeepCopy(), Spec: *d.Template.Spec.DeepCopy()}
			p.Name, p.Namespace, p.UID = fmt.Sprintf("%s-%d", d.Name, i), "default", types.UID(fmt.Sprintf("%s-%d", d.Name, i))
			pods = append(pods, p)
		}
	}
	plan, err := FreshPlan(pods, []*nsv1.NodePool{&sc.NodePools[0]}, cat.Types(), nil)
	if err != nil || len(plan.Unschedulable) > 0 {
		t.Fatalf("fresh plan: %v, %d unplaced", err, len(plan.Unschedulable))
	}
	fresh := plan.Cost()
	t.Logf("%d pods left: the fleet ends at %d nodes, $%.4f/h; a fresh plan costs $%.4f/h on %d nodes (%.1f %% above)",
		len(pods), nodes, final, fresh, len(plan.NewClaims), 100*(final/fresh-1))
	if final > 1.10*fresh {
		t.Errorf("the fleet ends at $%.4f/h, more than 10 %% above a fresh plan's $%.4f/h", final, fresh)
	}
}
