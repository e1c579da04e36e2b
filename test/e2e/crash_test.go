package e2e

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// tagNodeClaim is the tag the controller puts on every instance it launches.
const tagNodeClaim = "nodesmith.sh/nodeclaim"

// crashRow is one line of the crash matrix's figures.
type crashRow struct {
	scenario string
	kills    int
	// recovered is from the kill until pods, claims and instances agree again.
	recovered time.Duration
	dups      int
	orphans   int // instances launched without a claim learning of them, terminated by GC
	leaks     int
	note      string
}

func logCrashTable(t *testing.T, title string, rows []crashRow) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%-46s %5s %10s %10s %8s %6s  %s\n", "scenario", "kills", "recovered", "duplicates", "GC'd", "leaks", "note")
	kills, dups, leaks := 0, 0, 0
	for _, r := range rows {
		rec := "—"
		if r.recovered > 0 {
			rec = r.recovered.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "%-46s %5d %10s %10d %8d %6d  %s\n", r.scenario, r.kills, rec, r.dups, r.orphans, r.leaks, r.note)
		kills, dups, leaks = kills+r.kills, dups+r.dups, leaks+r.leaks
	}
	fmt.Fprintf(&b, "%-46s %5d %10s %10d %8s %6d\n", "total", kills, "", dups, "", leaks)
	t.Logf("%s:\n%s", title, b.String())
}

// fleetWatch samples the world and the NodeClaims every 200 ms: two live
// instances tagged with one claim at the same time are a duplicate launch
// (GC's grace is 10 s, so a duplicate lives far longer than a sample).
type fleetWatch struct {
	stopc, done chan struct{}
	mu          sync.Mutex
	dups        map[string]map[string]bool // claim -> its instances seen live together
	seen        map[string]bool            // provider IDs ever recorded on a claim
}

func watchFleet() *fleetWatch {
	w := &fleetWatch{stopc: make(chan struct{}), done: make(chan struct{}),
		dups: map[string]map[string]bool{}, seen: map[string]bool{}}
	go func() {
		defer close(w.done)
		for {
			w.sample()
			select {
			case <-w.stopc:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *fleetWatch) sample() {
	byClaim := map[string][]string{}
	for _, in := range liveInstances() {
		if c := in.Tags[tagNodeClaim]; c != "" {
			byClaim[c] = append(byClaim[c], in.ID)
		}
	}
	var list nsv1.NodeClaimList
	err := kube().List(ctx(), &list)
	w.mu.Lock()
	defer w.mu.Unlock()
	for c, ids := range byClaim {
		if len(ids) < 2 {
			continue
		}
		if w.dups[c] == nil {
			w.dups[c] = map[string]bool{}
		}
		for _, id := range ids {
			w.dups[c][id] = true
		}
	}
	if err == nil {
		for _, c := range list.Items {
			if c.Status.ProviderID != "" {
				w.seen[c.Status.ProviderID] = true
			}
		}
	}
}

func (w *fleetWatch) stop() {
	close(w.stopc)
	<-w.done
}

// duplicates is the number of claims that ever had two live instances.
func (w *fleetWatch) duplicates() (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	for c, ids := range w.dups {
		var l []string
		for id := range ids {
			l = append(l, id)
		}
		sort.Strings(l)
		parts = append(parts, c+": "+strings.Join(l, ","))
	}
	sort.Strings(parts)
	return len(w.dups), strings.Join(parts, "; ")
}

// orphans counts the instances launched since since whose ID no claim ever
// recorded: launched by a call whose answer was lost, then terminated by GC.
func (w *fleetWatch) orphans(since time.Time) int {
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, in := range lab.World.Instances() {
		if in.LaunchTime.Before(since) || in.Tags[tagNodeClaim] == "" {
			continue
		}
		if !w.seen[providerID(in)] {
			n++
		}
	}
	return n
}

func providerID(in fakeaws.Instance) string { return fmt.Sprintf("aws:///%s/%s", in.Zone, in.ID) }

// settle waits until every app runs its pods, every claim of pool is
// initialized (none left launching or deleting) and every live instance
// belongs to a claim (GC has removed the orphans).
func settle(t *testing.T, pool string, apps map[string]int) {
	t.Helper()
	waitFor(t, 5*time.Minute, "pods running, claims initialized, no orphan instance", func() error {
		for app, n := range apps {
			if err := allRunning(t, app, n)(); err != nil {
				return fmt.Errorf("%s: %w", app, err)
			}
		}
		byID := map[string]bool{}
		for _, c := range claimsOf(t, pool) {
			if !c.DeletionTimestamp.IsZero() {
				return fmt.Errorf("nodeclaim %s still deleting", c.Name)
			}
			if !meta.IsStatusConditionTrue(c.Status.Conditions, nsv1.ConditionInitialized) {
				return fmt.Errorf("nodeclaim %s not initialized (provider id %q)", c.Name, c.Status.ProviderID)
			}
			byID[c.Status.ProviderID] = true
		}
		for _, in := range liveInstances() {
			if !byID[providerID(in)] {
				return fmt.Errorf("instance %s (claim %q) has no nodeclaim", in.ID, in.Tags[tagNodeClaim])
			}
		}
		return nil
	})
}

// leaks are live instances no claim of any pool names.
func leaks(t *testing.T) int {
	byID := map[string]bool{}
	var list nsv1.NodeClaimList
	if err := kube().List(ctx(), &list); err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		byID[c.Status.ProviderID] = true
	}
	n := 0
	for _, in := range liveInstances() {
		if !byID[providerID(in)] {
			n++
		}
	}
	return n
}

// armKill kills the lab's controller the first time an EC2 call of action
// reaches the simulated AWS (before it is served, the call is then dropped,
// or after its answer is written) and reports the instant on the channel.
func armKill(action string, after bool) <-chan time.Time {
	killed := make(chan time.Time, 1)
	var once sync.Once
	lab.Faults.setHook(func(a string, isAfter bool) bool {
		if a != action || isAfter != after {
			return false
		}
		fired := false
		once.Do(func() {
			lab.controller.Kill()
			fired = true
			killed <- time.Now()
		})
		return fired
	})
	return killed
}

func awaitKill(t *testing.T, killed <-chan time.Time, what string) time.Time {
	t.Helper()
	defer lab.Faults.setHook(nil)
	select {
	case at := <-killed:
		if err := lab.startController(); err != nil {
			t.Fatal(err)
		}
		return at
	case <-time.After(3 * time.Minute):
		t.Fatalf("the controller never reached %s", what)
	}
	return time.Time{}
}

// ensureController starts the lab's controller if it is not running.
func ensureController(t *testing.T) {
	select {
	case <-lab.controller.Done():
		if err := lab.startController(); err != nil {
			t.Error(err)
		}
	default:
	}
}

// claimOnNodeWithPods picks a claim whose node runs pods of app.
func claimOnNodeWithPods(t *testing.T, app string) (nsv1.NodeClaim, int) {
	t.Helper()
	var pods corev1.PodList
	if err := kube().List(ctx(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	perNode := map[string]int{}
	for _, p := range pods.Items {
		perNode[p.Spec.NodeName]++
	}
	for _, c := range claimsOf(t, spotPool) {
		if n := perNode[c.Status.NodeName]; n > 0 && c.Status.NodeName != "" && c.DeletionTimestamp.IsZero() {
			return c, n
		}
	}
	t.Fatalf("no nodeclaim runs pods of %s", app)
	return nsv1.NodeClaim{}, 0
}

// crashMatrix kills the controller (SIGKILL) at each step of a launch and a
// drain, then at random instants of a 300-pod scale-up, restarting it after
// each kill, and checks that nothing was launched twice, nothing leaked
// and nothing was lost.
func crashMatrix(t *testing.T) {
	w := watchFleet()
	defer w.stop()
	var rows []crashRow
	defer func() { logCrashTable(t, "crash matrix (SIGKILL, then restart)", rows) }()
	dupsSoFar := 0
	row := func(scenario string, since, killedAt time.Time, kills int, note string) {
		d, detail := w.duplicates()
		if d > dupsSoFar {
			t.Errorf("%s: %d claims with two live instances: %s", scenario, d-dupsSoFar, detail)
		}
		l := leaks(t)
		if l > 0 {
			t.Errorf("%s: %d live instances without a claim after GC", scenario, l)
		}
		rows = append(rows, crashRow{scenario: scenario, kills: kills, recovered: time.Since(killedAt),
			dups: d - dupsSoFar, orphans: w.orphans(since), leaks: l, note: note})
		dupsSoFar = d
	}
	const app, burst = "crash-matrix", "crash-burst"
	// A failed scenario must not leave the next steps without a controller,
	// or with its pods and claims.
	defer func() {
		lab.Faults.setHook(nil)
		lab.Bridge.SetOnLaunch(nil)
		if t.Failed() {
			ensureController(t)
			cleanUp(t, app, burst)
		}
	}()
	if err := kube().Create(ctx(), deployment(app, "spot", 0, "1", "512Mi")); err != nil {
		t.Fatal(err)
	}

	// A launch: before CreateFleet, inside it (the instance exists, the
	// answer is never written) and after its answer, before the claim's
	// status is written.
	launches := []struct {
		name   string
		arm    func() <-chan time.Time
		target int
	}{
		{"launch: before CreateFleet", func() <-chan time.Time { return armKill("CreateFleet", false) }, 4},
		{"launch: inside CreateFleet (answer lost)", func() <-chan time.Time {
			killed := make(chan time.Time, 1)
			var once sync.Once
			lab.Bridge.SetOnLaunch(func(fakeaws.Instance) {
				once.Do(func() { lab.controller.Kill(); killed <- time.Now() })
			})
			return killed
		}, 8},
		{"launch: after CreateFleet, before claim status", func() <-chan time.Time { return armKill("CreateFleet", true) }, 12},
	}
	for _, l := range launches {
		since := time.Now()
		killed := l.arm()
		resize(t, app, l.target)
		at := awaitKill(t, killed, l.name)
		lab.Bridge.SetOnLaunch(nil)
		settle(t, spotPool, map[string]int{app: l.target})
		row(l.name, since, at, 1, "")
	}

	// A drain: while its pods are evicted, and after the instance is
	// terminated but before the claim's finalizer is removed.
	{
		since := time.Now()
		victim, npods := claimOnNodeWithPods(t, app)
		if err := kube().Delete(ctx(), &victim); err != nil {
			t.Fatal(err)
		}
		var at time.Time
		waitFor(t, 2*time.Minute, "an eviction from the draining node", func() error {
			var pods corev1.PodList
			if err := kube().List(ctx(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
				return err
			}
			on := 0
			for _, p := range pods.Items {
				if p.Spec.NodeName == victim.Status.NodeName {
					if !p.DeletionTimestamp.IsZero() {
						on = -1
						break
					}
					on++
				}
			}
			if on >= 0 && on == npods {
				return fmt.Errorf("all %d pods still on %s", on, victim.Status.NodeName)
			}
			lab.controller.Kill()
			at = time.Now()
			return nil
		})
		if err := lab.startController(); err != nil {
			t.Fatal(err)
		}
		settle(t, spotPool, map[string]int{app: 12})
		row("drain: during eviction", since, at, 1, "")
	}
	{
		since := time.Now()
		victim, _ := claimOnNodeWithPods(t, app)
		killed := armKill("TerminateInstances", true)
		if err := kube().Delete(ctx(), &victim); err != nil {
			t.Fatal(err)
		}
		at := awaitKill(t, killed, "TerminateInstances")
		settle(t, spotPool, map[string]int{app: 12})
		if err := kube().Get(ctx(), client.ObjectKeyFromObject(&victim), &nsv1.NodeClaim{}); err == nil {
			t.Errorf("nodeclaim %s is back or never went", victim.Name)
		}
		row("drain: instance terminated, finalizer not removed", since, at, 1, "")
	}
	resize(t, app, 0)

	// Random instants of a 300-pod scale-up: kill, restart at once, and
	// kill again 0.5 to 3 s later. The lab runs 300 pods in ~15 s without
	// kills, so the Deployment grows by 20 pods before each kill (from 40 to
	// 300 over the first 14) and every kill finds pods pending.
	rng := rand.New(rand.NewSource(14))
	since := time.Now()
	if err := kube().Create(ctx(), deployment(burst, "spot", 20, "500m", "128Mi")); err != nil {
		t.Fatal(err)
	}
	const randomKills = 16
	var kills []time.Time
	var progress []string
	for i := 0; i < randomKills; i++ {
		resize(t, burst, min(300, 40+20*i))
		time.Sleep(500*time.Millisecond + time.Duration(rng.Int63n(int64(2500*time.Millisecond))))
		running, _, _ := podsOf(t, burst)
		lab.controller.Kill()
		kills = append(kills, time.Now())
		progress = append(progress, fmt.Sprintf("%d", running))
		if err := lab.startController(); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, spotPool, map[string]int{burst: 300, app: 0})
	last := kills[len(kills)-1]
	// Time from each kill to the next launch a restarted controller made.
	var toLaunch []string
	fleets := lab.Fleets.since(since)
	for _, k := range kills {
		s := "—"
		for _, f := range fleets {
			if f.At.After(k) {
				s = f.At.Sub(k).Round(100 * time.Millisecond).String()
				break
			}
		}
		toLaunch = append(toLaunch, s)
	}
	t.Logf("300-pod scale-up, %d kills at +%s; pods running at each kill (of 40, 60, ... 300): %s; from each kill to the next CreateFleet: %s",
		randomKills, offsets(since, kills), strings.Join(progress, ","), strings.Join(toLaunch, ","))
	row("300-pod scale-up: random instants", since, last, randomKills,
		fmt.Sprintf("all Running %s after the first kill; recovered: from the last", time.Since(kills[0]).Round(100*time.Millisecond)))

	cleanUp(t, burst, app)
}

// cleanUp deletes the Deployments and then every claim of the spot pool
// (the controller drains and terminates them all at once, which is quicker
// than consolidation's budgeted steps; step 2 covers scale to zero), and
// waits until no claim, node or live instance is left.
func cleanUp(t *testing.T, apps ...string) {
	t.Helper()
	cleanUpArea(t, spotPool, apps...)
}

// resize sets a Deployment's replicas with a merge patch: the Deployment
// controller writes its status all through a scale-up, and a read-modify-
// write (scale) would conflict with it.
func resize(t *testing.T, name string, replicas int) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))
	if err := kube().Patch(ctx(), d, patch); err != nil {
		t.Fatal(err)
	}
}

func offsets(since time.Time, ts []time.Time) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Sub(since).Round(100*time.Millisecond).String())
	}
	return strings.Join(s, ",")
}
