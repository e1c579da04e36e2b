package perf

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/labkit"
)

const (
	poolName      = "perf"
	nodeClassName = "perf"
	// fleetLabel marks the perf pool's nodes; every workload selects it, so
	// topology spread counts only the pool's nodes (not the system nodes).
	fleetLabel = "fleet"
	// settle is how long the fleet must stay unchanged after a disruption
	// before it counts as finished; the time reported is when it last
	// changed, not when the wait ended.
	settle = 60 * time.Second
)

// limits are Karpenter's pass/fail thresholds for a scenario (zero: none).
type limits struct {
	time    time.Duration
	memMB   float64 // P95 memory, MB (10^6 bytes)
	cores   float64
	cpuUtil float64 // reserved CPU share, lower bound
	memUtil float64 // reserved memory share, lower bound
}

// workload is one Deployment of a scenario.
type workload struct {
	name         string
	replicas     int32
	cpu, mem     string
	hostSpread   bool // topology spread on hostname, maxSkew 1, DoNotSchedule
	zoneSpread   bool // topology spread on zone, maxSkew 1, DoNotSchedule
	antiAff      bool // required pod anti-affinity to itself on hostname
	doNotDisrupt bool
	// scaleTo is the replica count of the scenario's scale-down (0: kept).
	scaleTo int32
}

// scenario is one of Karpenter's performance tests.
type scenario struct {
	key, title string
	workloads  []workload
	limit      limits
	// disruption, when set, follows the scale-out and is what the
	// scenario's time measures: "consolidation" (scale to scaleTo and wait
	// for the fleet to settle) or "drift" (change the pool's template and
	// wait until every node was replaced).
	disruption string
	// protect: after the scale-down, every node that ran a do-not-disrupt
	// pod must still be there (the scenario's time is the scale-out's).
	protect bool
	// timeout bounds each wait; a scenario that does not finish fails.
	timeout time.Duration
}

func (s scenario) pods() (n int32) {
	for _, w := range s.workloads {
		n += w.replicas
	}
	return n
}

func (s scenario) podsAfter() (n int32) {
	for _, w := range s.workloads {
		if w.scaleTo > 0 {
			n += w.scaleTo
		} else {
			n += w.replicas
		}
	}
	return n
}

// result is one run of a scenario.
type result struct {
	sc       scenario
	run      int
	scaleOut time.Duration
	disrupt  time.Duration // consolidation or drift; zero when none
	done     bool
	nodes    int     // after the scale-out
	nodesEnd int     // after the disruption
	use      usage   // the controller over the whole run
	cpuUtil  float64 // at the scale-out's end
	memUtil  float64
	outUse   usage // the controller over the scale-out alone
	note     string
	load     string // /proc/loadavg at the end
}

// measured is the figure a scenario's time limit applies to.
func (r result) measured() time.Duration {
	if r.sc.disruption != "" {
		return r.disrupt
	}
	return r.scaleOut
}

var (
	resultsMu sync.Mutex
	results   []result
)

func record(r result) {
	resultsMu.Lock()
	results = append(results, r)
	resultsMu.Unlock()
}

// runScenario runs sc once against the lab and fails t when one of
// Karpenter's limits for it is broken.
func runScenario(t *testing.T, sc scenario, run int) result {
	c := lab.Env.Client
	ctx := context.Background()
	r := result{sc: sc, run: run}
	pool := perfPool()
	if err := c.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	defer cleanup(t)
	if err := lab.restartController(); err != nil {
		t.Fatal(err)
	}
	defer keepLog(t, sc, run)
	mon := startMonitor(lab.controller)
	defer mon.stop()
	// The controller syncs its caches before it acts; what Karpenter's
	// suite measures starts at the workloads' creation, with the
	// controller already up.
	time.Sleep(3 * time.Second)
	mon.begin()

	start := time.Now()
	for _, w := range sc.workloads {
		if err := c.Create(ctx, w.deployment()); err != nil {
			t.Fatal(err)
		}
	}
	want := sc.pods()
	waitFor(t, sc.timeout, fmt.Sprintf("%d pods running", want), func() error { return podsRunning(want) })
	r.scaleOut = time.Since(start)
	r.nodes = len(poolNodes(t))
	r.cpuUtil, r.memUtil = utilisation(t)
	r.outUse = mon.snapshot()
	t.Logf("%s: over the scale-out the controller's heap in use P95 %.0f MB, RSS P95 %.0f MB / peak %.0f MB, CPU %.2f cores",
		sc.title, r.outUse.heapP95, r.outUse.rssP95, r.outUse.rssPeak, r.outUse.cores)
	t.Logf("%s: %d pods Running on %d nodes %s after the Deployments; reserved cpu %.0f %%, memory %.0f %%",
		sc.title, want, r.nodes, r.scaleOut.Round(100*time.Millisecond), 100*r.cpuUtil, 100*r.memUtil)

	switch {
	case sc.disruption == "consolidation" || sc.protect:
		protected := map[string]bool{}
		if sc.protect {
			for _, p := range listPods(t) {
				if p.Annotations[nsv1.AnnotationDoNotDisrupt] == "true" && p.Spec.NodeName != "" {
					protected[p.Spec.NodeName] = true
				}
			}
		}
		begin := time.Now()
		for _, w := range sc.workloads {
			if w.scaleTo > 0 {
				scale(t, w.name, w.scaleTo)
			}
		}
		last := waitSettled(t, sc, begin, func() error { return podsRunning(sc.podsAfter()) })
		r.disrupt = last.Sub(begin)
		r.nodesEnd = len(poolNodes(t))
		if sc.disruption == "consolidation" && r.nodesEnd >= r.nodes {
			t.Errorf("%s: %d nodes after the scale-down to %d pods, %d before: nothing was consolidated", sc.title, r.nodesEnd, sc.podsAfter(), r.nodes)
		}
		if sc.protect {
			left := map[string]bool{}
			for _, n := range poolNodes(t) {
				left[n.Name] = true
			}
			gone := 0
			for n := range protected {
				if !left[n] {
					gone++
				}
			}
			r.note = fmt.Sprintf("%d of %d nodes running do-not-disrupt pods kept; %d → %d nodes after the scale-down (settled in %s)",
				len(protected)-gone, len(protected), r.nodes, r.nodesEnd, r.disrupt.Round(time.Second))
			if gone > 0 || len(protected) == 0 {
				t.Errorf("%s: %s", sc.title, r.note)
			}
		} else {
			r.note = fmt.Sprintf("%d → %d nodes", r.nodes, r.nodesEnd)
		}
	case sc.disruption == "drift":
		before := map[string]bool{}
		for _, nc := range claims(t) {
			before[nc.Name] = true
		}
		begin := time.Now()
		if err := c.Get(ctx, types.NamespacedName{Name: poolName}, pool); err != nil {
			t.Fatal(err)
		}
		pool.Spec.Template.ObjectMeta.Annotations = map[string]string{"perf.nodesmith.sh/drift-trigger": strconv.FormatInt(begin.Unix(), 10)}
		if err := c.Update(ctx, pool); err != nil {
			t.Fatal(err)
		}
		waitFor(t, sc.timeout, "every node replaced after drift", func() error {
			left := 0
			for _, nc := range claims(t) {
				if before[nc.Name] {
					left++
				}
			}
			if left > 0 {
				return fmt.Errorf("%d of %d drifted nodeclaims left", left, len(before))
			}
			return podsRunning(want)
		})
		r.disrupt = time.Since(begin)
		r.nodesEnd = len(poolNodes(t))
		r.note = fmt.Sprintf("%d nodes replaced by %d", len(before), r.nodesEnd)
	}
	r.done = true
	r.use = mon.end()
	r.load = loadAvg()
	record(r)
	t.Logf("%s run %d: time %s (scale-out %s), controller heap P95 %.0f MB, RSS P95 %.0f MB / peak %.0f MB, CPU %.2f cores, load %s",
		sc.title, run, r.measured().Round(time.Second), r.scaleOut.Round(time.Second), r.use.heapP95, r.use.rssP95, r.use.rssPeak, r.use.cores, r.load)
	checkLimits(t, r)
	return r
}

// assertLimits: every limit of Karpenter's suite fails the test. The perf
// build (make perf) sets it. Without it (make test, on CI's two cores beside
// the e2e lab) time, memory and CPU are measured and logged against the
// limits but not asserted — performance targets are not timed asserts in
// make test — while utilisation, how well the plan packs, which the
// machine's load does not decide, is asserted either way.
var assertLimits = false

// checkLimits fails t where Karpenter's suite would fail (time, memory and
// CPU only under assertLimits).
func checkLimits(t *testing.T, r result) {
	t.Helper()
	perf := t.Errorf
	if !assertLimits {
		perf = func(format string, args ...any) {
			t.Logf("over Karpenter's limit (asserted by make perf): "+format, args...)
		}
	}
	l := r.sc.limit
	if got := r.measured(); l.time > 0 && got >= l.time {
		perf("%s: %s, Karpenter's limit is %s", r.sc.title, got.Round(time.Second), l.time)
	}
	if l.memMB > 0 && r.use.heapP95 == 0 {
		t.Errorf("%s: no sample of the controller's heap (go_memstats_heap_inuse_bytes from %s)", r.sc.title, lab.controller.metrics)
	}
	if l.memMB > 0 && r.use.heapP95 >= l.memMB {
		perf("%s: controller P95 heap in use %.0f MB, Karpenter's limit is %.0f MB", r.sc.title, r.use.heapP95, l.memMB)
	}
	if l.cores > 0 && r.use.cores >= l.cores {
		perf("%s: controller CPU %.2f cores, Karpenter's limit is %.2f", r.sc.title, r.use.cores, l.cores)
	}
	if l.cpuUtil > 0 && r.cpuUtil <= l.cpuUtil {
		t.Errorf("%s: reserved CPU %.1f %%, Karpenter's limit is > %.0f %%", r.sc.title, 100*r.cpuUtil, 100*l.cpuUtil)
	}
	if l.memUtil > 0 && r.memUtil <= l.memUtil {
		t.Errorf("%s: reserved memory %.1f %%, Karpenter's limit is > %.0f %%", r.sc.title, 100*r.memUtil, 100*l.memUtil)
	}
}

// perfPool is Karpenter's performance-suite NodePool in our terms: on-demand
// c, m and r types of at most 32 vCPUs (their KWOK types are capped below
// 32), no limits, WhenEmptyOrUnderutilized after 30 s, a 100 % budget.
func perfPool() *nsv1.NodePool {
	return &nsv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: poolName},
		Spec: nsv1.NodePoolSpec{
			Template: nsv1.NodeClaimTemplate{
				ObjectMeta: nsv1.NodeClaimTemplateObjectMeta{Labels: map[string]string{fleetLabel: poolName}},
				Spec: nsv1.NodeClaimTemplateSpec{
					NodeClassRef: &nsv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nodeClassName},
					Requirements: []nsv1.NodeSelectorRequirementWithMinValues{
						{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
						{Key: awsv1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpLt, Values: []string{"33"}},
						{Key: nsv1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{nsv1.CapacityTypeOnDemand}},
					},
				},
			},
			Disruption: nsv1.Disruption{
				ConsolidationPolicy: nsv1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				ConsolidateAfter:    nsv1.MustParseNillableDuration("30s"),
				Budgets:             []nsv1.Budget{{Nodes: "100%"}},
			},
		},
	}
}

func (w workload) deployment() *appsv1.Deployment {
	labels := map[string]string{"app": w.name}
	sel := &metav1.LabelSelector{MatchLabels: labels}
	spec := corev1.PodSpec{
		NodeSelector:                  map[string]string{fleetLabel: poolName},
		TerminationGracePeriodSeconds: ptr.To(int64(0)),
		Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(w.cpu), corev1.ResourceMemory: resource.MustParse(w.mem)}}}},
	}
	if w.zoneSpread {
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel})
	}
	if w.hostSpread {
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel})
	}
	if w.antiAff {
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: sel, TopologyKey: corev1.LabelHostname}}}}
	}
	meta := metav1.ObjectMeta{Labels: labels}
	if w.doNotDisrupt {
		meta.Annotations = map[string]string{nsv1.AnnotationDoNotDisrupt: "true"}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(w.replicas),
			Selector: sel,
			Template: corev1.PodTemplateSpec{ObjectMeta: meta, Spec: spec},
		},
	}
}

func scale(t *testing.T, name string, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := lab.Env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = &replicas
	if err := lab.Env.Client.Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every second until it returns nil, failing t with its
// last error and the controller's log tail after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := labkit.Poll(timeout, time.Second, cond); err != nil {
		var tail string
		if lab.controller == nil {
			tail = "(no controller running)"
		} else {
			tail = lab.controller.Tail(20)
		}
		t.Fatalf("%s: not done after %s: %v\ncontroller log tail:\n%s", what, timeout, err, tail)
	}
}

// waitSettled waits until cond holds, no NodeClaim is being deleted and
// the set of NodeClaims has not changed for settle, and returns when it
// last changed (or began, if it never did).
func waitSettled(t *testing.T, sc scenario, begin time.Time, cond func() error) time.Time {
	t.Helper()
	lastNames, lastChange := "", begin
	waitFor(t, sc.timeout, "the fleet settled after the scale-down", func() error {
		var names []string
		deleting := 0
		for _, nc := range claims(t) {
			names = append(names, nc.Name)
			if !nc.DeletionTimestamp.IsZero() {
				deleting++
			}
		}
		sort.Strings(names)
		if key := strings.Join(names, " "); key != lastNames {
			if lastNames != "" {
				lastChange = time.Now()
			}
			lastNames = key
		}
		if err := cond(); err != nil {
			return err
		}
		if deleting > 0 {
			return fmt.Errorf("%d of %d nodeclaims being deleted", deleting, len(names))
		}
		if quiet := time.Since(lastChange); quiet < settle {
			return fmt.Errorf("%d nodeclaims, unchanged for %s", len(names), quiet.Round(time.Second))
		}
		return nil
	})
	return lastChange
}

func listPods(t *testing.T) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := lab.Env.Client.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// podsRunning is nil when exactly want pods (not being deleted) exist in
// the namespace and all of them are Running.
func podsRunning(want int32) error {
	c, err := labkit.CountPods(context.Background(), lab.Env.Client, ns, nil)
	if err != nil {
		return err
	}
	return c.AllRunning(int(want))
}

func claims(t *testing.T) []nsv1.NodeClaim {
	t.Helper()
	var list nsv1.NodeClaimList
	if err := lab.Env.Client.List(context.Background(), &list, client.MatchingLabels{nsv1.LabelNodePool: poolName}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func poolNodes(t *testing.T) []corev1.Node {
	t.Helper()
	var list corev1.NodeList
	if err := lab.Env.Client.List(context.Background(), &list, client.MatchingLabels{fleetLabel: poolName}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// utilisation is Karpenter's reserved utilisation: the requests of the
// pods bound to the pool's nodes over those nodes' allocatable, for CPU and
// memory.
func utilisation(t *testing.T) (cpu, mem float64) {
	t.Helper()
	alloc := map[string]bool{}
	var allocCPU, allocMem, reqCPU, reqMem float64
	for _, n := range poolNodes(t) {
		alloc[n.Name] = true
		allocCPU += n.Status.Allocatable.Cpu().AsApproximateFloat64()
		allocMem += n.Status.Allocatable.Memory().AsApproximateFloat64()
	}
	for _, p := range listPods(t) {
		if !alloc[p.Spec.NodeName] || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			reqCPU += c.Resources.Requests.Cpu().AsApproximateFloat64()
			reqMem += c.Resources.Requests.Memory().AsApproximateFloat64()
		}
	}
	if allocCPU == 0 || allocMem == 0 {
		return 0, 0
	}
	return reqCPU / allocCPU, reqMem / allocMem
}

// cleanup removes a scenario's workloads, nodes and NodePool, so the next
// one starts from an empty pool.
// keepLog copies the scenario's controller log to the directory
// NODESMITH_PERF_LOGS names, as <scenario>-run<N>.log, so a run's
// provisioning cycles can be read after the lab is gone; unset keeps none.
func keepLog(t *testing.T, sc scenario, run int) {
	dir := os.Getenv("NODESMITH_PERF_LOGS")
	if dir == "" || lab.controller == nil {
		return
	}
	b, err := os.ReadFile(lab.controller.LogPath)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		dst := filepath.Join(dir, fmt.Sprintf("%s-run%d.log", sc.key, run))
		err = os.WriteFile(dst, b, 0o644)
		t.Logf("controller log kept in %s", dst)
	}
	if err != nil {
		t.Errorf("NODESMITH_PERF_LOGS=%q: keeping the controller log: %v", dir, err)
	}
}

func cleanup(t *testing.T) {
	c := lab.Env.Client
	ctx := context.Background()
	if err := c.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(ns), client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Errorf("deleting the deployments: %v", err)
	}
	waitFor(t, 5*time.Minute, "the scenario's pods gone", func() error {
		if n := len(listPods(t)); n > 0 {
			return fmt.Errorf("%d pods left", n)
		}
		return nil
	})
	// One by one, and again for any a failed call left: a single
	// deletecollection over a thousand claims can outlast the request.
	waitFor(t, 10*time.Minute, "the pool's nodes gone", func() error {
		left := claims(t)
		for i := range left {
			if left[i].DeletionTimestamp.IsZero() {
				if err := c.Delete(ctx, &left[i]); client.IgnoreNotFound(err) != nil {
					return fmt.Errorf("deleting nodeclaim %s: %w", left[i].Name, err)
				}
			}
		}
		if n := len(left); n > 0 {
			return fmt.Errorf("%d nodeclaims left", n)
		}
		if n := len(poolNodes(t)); n > 0 {
			return fmt.Errorf("%d nodes left", n)
		}
		return nil
	})
	if err := c.Delete(ctx, &nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: poolName}}); client.IgnoreNotFound(err) != nil {
		t.Errorf("deleting the nodepool: %v", err)
	}
	waitFor(t, time.Minute, "the nodepool gone", func() error {
		err := c.Get(ctx, types.NamespacedName{Name: poolName}, &nsv1.NodePool{})
		if err == nil {
			return fmt.Errorf("nodepool %s still exists", poolName)
		}
		return client.IgnoreNotFound(err)
	})
}

// monitor samples the controller's resident memory (VmRSS, every 500 ms)
// and reads its CPU time (utime + stime) and high-water mark (VmHWM).
type monitor struct {
	p       *controllerProc
	quit    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	on      bool
	samples []float64 // VmRSS, MB
	heap    []float64 // go_memstats_heap_inuse_bytes, MB
	cpu0    time.Duration
	t0      time.Time
}

func startMonitor(p *controllerProc) *monitor {
	m := &monitor{p: p, quit: make(chan struct{})}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-m.quit:
				return
			case <-p.Done():
				return
			case <-tick.C:
				kb := labkit.ProcStatusKB(p.Pid(), "VmRSS")
				heap := heapInuse(p.metrics)
				m.mu.Lock()
				if m.on && kb > 0 {
					m.samples = append(m.samples, float64(kb)*1024/1e6)
				}
				if m.on && heap > 0 {
					m.heap = append(m.heap, heap/1e6)
				}
				m.mu.Unlock()
			}
		}
	}()
	return m
}

// begin starts the measured window.
func (m *monitor) begin() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on, m.t0, m.cpu0 = true, time.Now(), procCPU(m.p.Pid())
}

// usage is the controller's figures over a window: P95 of its Go heap in
// use (what Karpenter's memory limits bound), P95 and peak (VmHWM) of its
// resident memory, all in MB, and its CPU in cores averaged over the window.
type usage struct {
	heapP95, rssP95, rssPeak, cores float64
}

// end closes the window.
func (m *monitor) end() usage {
	u := m.snapshot()
	m.mu.Lock()
	m.on = false
	m.mu.Unlock()
	return u
}

// snapshot is end's figures so far, leaving the window open.
func (m *monitor) snapshot() usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return usage{
		heapP95: p95(m.heap),
		rssP95:  p95(m.samples),
		rssPeak: float64(labkit.ProcStatusKB(m.p.Pid(), "VmHWM")) * 1024 / 1e6,
		cores:   (procCPU(m.p.Pid()) - m.cpu0).Seconds() / time.Since(m.t0).Seconds(),
	}
}

func p95(samples []float64) float64 {
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[(len(s)*95+99)/100-1]
}

var heapRE = regexp.MustCompile(`(?m)^go_memstats_heap_inuse_bytes ([0-9.e+]+)$`)

// heapInuse scrapes the controller's go_memstats_heap_inuse_bytes (0 when
// it cannot be read, e.g. before the metrics server listens).
func heapInuse(url string) float64 {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0
	}
	mm := heapRE.FindSubmatch(b)
	if mm == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(mm[1]), 64)
	return v
}

func (m *monitor) stop() {
	close(m.quit)
	m.wg.Wait()
}

// procCPU is a process's user + system CPU time from /proc/<pid>/stat
// (fields 14 and 15, in USER_HZ = 100 ticks a second).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// printTable writes every recorded run as a markdown table, Karpenter's
// limit beside our figure and our goal (a fifth of the time limit, half
// the memory limit).
func printTable(w io.Writer) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if len(results) == 0 {
		return
	}
	fmt.Fprintf(w, "\nKarpenter's performance suite against Nodesmith (lab: real control plane, KWOK, simulated AWS; boot delay %s; %d cores)\n\n", bootDelay, runtime.NumCPU())
	fmt.Fprintln(w, "| scenario | run | Karpenter limit | our goal | time (scale-out) | nodes | controller heap P95 | RSS P95 / peak | CPU cores | reserved cpu / mem | load avg | notes |")
	fmt.Fprintln(w, "|---|---:|---|---|---|---:|---:|---|---:|---|---|---|")
	for _, r := range results {
		l := r.sc.limit
		lim := fmt.Sprintf("< %s", fmtDur(l.time))
		goal := fmt.Sprintf("≤ %s", fmtDur(l.time/5))
		if l.memMB > 0 {
			lim += fmt.Sprintf(", < %.0f MB", l.memMB)
			goal += fmt.Sprintf(", ≤ %.0f MB", l.memMB/2)
		}
		if l.cores > 0 {
			lim += fmt.Sprintf(", < %.1f core", l.cores)
		}
		if l.cpuUtil > 0 {
			lim += fmt.Sprintf(", > %.0f %% cpu / %.0f %% mem", 100*l.cpuUtil, 100*l.memUtil)
		}
		t := fmtDur(r.measured())
		if r.sc.disruption != "" {
			t += fmt.Sprintf(" (%s)", fmtDur(r.scaleOut))
		}
		nodes := strconv.Itoa(r.nodes)
		if r.nodesEnd > 0 {
			nodes += " → " + strconv.Itoa(r.nodesEnd)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %.0f MB | %.0f / %.0f MB | %.2f | %.0f %% / %.0f %% | %s | %s |\n",
			r.sc.title, r.run, lim, goal, t, nodes, r.use.heapP95, r.use.rssP95, r.use.rssPeak, r.use.cores, 100*r.cpuUtil, 100*r.memUtil, r.load, r.note)
	}
	fmt.Fprintln(w)
}

func fmtDur(d time.Duration) string {
	if d >= time.Minute {
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}
