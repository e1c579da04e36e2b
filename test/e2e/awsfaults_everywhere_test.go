package e2e

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// The AWS-faults area: its NodePool and EC2NodeClass (a class of its own,
// so its AMI and instance profile are resolved through SSM and IAM while
// the faults are on) and its Deployment in the lab's namespace.
const (
	faultsPool = "faults-all"
	faultsApp  = "faults-all"
	faultsPods = 40
)

// retryServices are the SDK service IDs (the retry metric's service label)
// of the APIs in faultAPIs.
var retryServices = map[string]string{apiEC2: "EC2", apiIAM: "IAM", apiSQS: "SQS", apiSSM: "SSM", apiPricing: "Pricing", apiEKS: "EKS"}

// awsFaultsEverywhere restarts the controller (with the interruption queue
// and its metrics) behind faults on every API it calls — EC2, IAM, SQS, SSM,
// Pricing and EKS (DescribeCluster, once at start), each answering 30 % of calls with its own throttling error,
// 5 % of the rest with its own 5xx, the first two calls of each throttled
// (a burst), every call 20–50 ms late — then scales a Deployment to 40 pods
// in four steps on a NodePool and EC2NodeClass of its own, and interrupts
// one of its spot instances. Everything must still happen: all pods
// Running, the interruption handled (the claim replaced and gone before the
// instance is), no duplicate or leaked instance, no NodeClaim or Node
// deleted besides the interrupted one, no claim's instance terminated under
// it, and the controller's retry metric counting retries of every API.
func awsFaultsEverywhere(t *testing.T) {
	const share, errShare, burst = 0.3, 0.05, 2
	const latency, jitter = 20 * time.Millisecond, 30 * time.Millisecond
	w := watchFleet()
	defer w.stop()
	var sup *supervisor
	defer func() {
		lab.Faults.setFaults(0, 0)
		if sup != nil {
			sup.stop(t)
		}
		if t.Failed() {
			cleanUpArea(t, faultsPool, faultsApp)
		}
	}()

	// The injected answers, read by the SDK's own clients.
	lab.Faults.setAllFaults(share, errShare, 0, 0, 0)
	checkAllFaultsOnTheWire(t, share, errShare)

	noRefusals(t) // from here on, every refusal is the controller's
	lab.Faults.setAllFaults(share, errShare, burst, latency, jitter)
	stepStart := time.Now()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	sup = superviseController(t, "--interruption-queue="+labInterruptionQueue, "--metrics-bind-address="+addr)
	waitFor(t, 2*time.Minute, "the controller's interruption queue under faults", func() error {
		page, err := httpGet("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		if !strings.Contains(page, "nodesmith_interruption_queue_ready 1") {
			return fmt.Errorf("interruption queue not ready yet")
		}
		return nil
	})
	readyAt := time.Now()
	applyAreaPool(t, faultsPool)

	ledger := newClaimLedger(faultsPool)
	start := time.Now()
	if err := kube().Create(ctx(), deployment(faultsApp, faultsPool, 10, "500m", "128Mi")); err != nil {
		t.Fatal(err)
	}
	for n := 20; n <= faultsPods; n += 10 {
		time.Sleep(2 * time.Second)
		ledger.observe(t)
		resize(t, faultsApp, n)
	}
	waitFor(t, 4*time.Minute, fmt.Sprintf("%d pods running under faults on every API", faultsPods), func() error {
		ledger.observe(t)
		return allRunning(t, faultsApp, faultsPods)()
	})
	runningAt := time.Now()

	// One spot instance that runs pods is interrupted: the simulated AWS
	// puts the rebalance recommendation and the two-minute warning on the
	// queue, whose calls fail like the others.
	pods := podsByNode(t, faultsApp)
	var victim *nsv1.NodeClaim
	claims := claimsOf(t, faultsPool)
	sort.Slice(claims, func(i, j int) bool { return claims[i].Name < claims[j].Name })
	for i := range claims {
		if len(pods[claims[i].Status.NodeName]) > 0 {
			victim = &claims[i]
			break
		}
	}
	if victim == nil {
		t.Fatalf("no claim of %d runs a pod", len(claims))
	}
	if err := lab.World.Interrupt(instanceOf(victim)); err != nil {
		t.Fatal(err)
	}
	noticeAt := time.Now()
	in, _ := lab.World.Instance(instanceOf(victim))
	moved := len(pods[victim.Status.NodeName])
	waitFor(t, fakeaws.InterruptionNotice, "the interrupted claim replaced and gone, every pod running elsewhere", func() error {
		ledger.observe(t)
		err := kube().Get(ctx(), client.ObjectKeyFromObject(victim), &nsv1.NodeClaim{})
		if err == nil {
			return fmt.Errorf("nodeclaim %s still there", victim.Name)
		}
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if n := len(podsByNode(t, faultsApp)[victim.Status.NodeName]); n > 0 {
			return fmt.Errorf("%d pods still on %s", n, victim.Status.NodeName)
		}
		return allRunning(t, faultsApp, faultsPods)()
	})
	handledAt := time.Now()
	if !handledAt.Before(in.InterruptAt) {
		t.Errorf("the interrupted claim went at %s, after the instance's interruption at %s", handledAt.Format(time.RFC3339Nano), in.InterruptAt.Format(time.RFC3339Nano))
	}
	settle(t, faultsPool, map[string]int{faultsApp: faultsPods})
	ledger.observe(t)

	// Nothing else went: no claim given up, no node removed, no instance
	// terminated under its claim while AWS failed calls.
	unlaunched, launched, nodes := ledger.gone(t, map[string]bool{victim.Name: true})
	for _, c := range unlaunched {
		t.Errorf("nodeclaim %s was deleted before it launched while AWS failed calls", c)
	}
	for _, c := range launched {
		t.Errorf("nodeclaim %s was deleted although only %s was interrupted", c, victim.Name)
	}
	for _, n := range nodes {
		t.Errorf("node %s was deleted although only %s was interrupted", n, victim.Status.NodeName)
	}
	instancesOfClaimsLive(t, faultsPool)
	d, detail := w.duplicates()
	if d > 0 {
		t.Errorf("%d claims with two live instances: %s", d, detail)
	}
	orphans, leaked := w.orphans(start), leaks(t)
	if leaked > 0 {
		t.Errorf("%d live instances no claim names", leaked)
	}

	// Every API was failed, and the controller retried each.
	page, err := httpGet("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("reading the controller's metrics: %v", err)
	}
	retries := retriesByService(t, page)
	interrupted := sumSamples(t, page, "nodesmith_interruptions_total", `nodepool="`+faultsPool+`"`)
	if interrupted < 1 {
		t.Errorf("nodesmith_interruptions_total counts no interruption of %s", faultsPool)
	}
	var rows []string
	for _, api := range faultAPIs {
		c := lab.Faults.countsOf(api)
		r := retries[retryServices[api]]
		if c.throttled+c.failed == 0 {
			t.Errorf("%s: no call was failed (%d calls): the step does not exercise it", api, c.calls)
		}
		if r.total == 0 {
			t.Errorf("%s: the controller counted no retry although %d of its %d calls were throttled and %d failed", api, c.throttled, c.calls, c.failed)
		}
		rows = append(rows, fmt.Sprintf("%-8s %6d %9d %7d %8.0f %8.0f %8.0f   %s", api, c.calls, c.throttled, c.failed,
			r.total, r.byReason["throttled"], r.byReason["server_error"], c.byOperation()))
	}
	exits := sup.restarts()
	t.Logf("faults on every API (%.0f %% throttled, %.0f %% of the rest 5xx, first %d calls of each throttled, %s+%s latency):\n%-8s %6s %9s %7s %8s %8s %8s   %s\n%s",
		share*100, errShare*100, burst, latency, jitter, "api", "calls", "throttled", "5xx", "retries", "throttle", "5xx", "throttled operations", strings.Join(rows, "\n"))
	t.Logf("controller up with its queue %s after the restart; %d pods Running %s after the Deployment; interruption: %d pods moved, claim %s gone %s after the notice (%s before the instance's end); %d claims, %d duplicates, %d GC'd, %d leaks, %d controller exits; step %s so far",
		ms(readyAt.Sub(stepStart)), faultsPods, ms(runningAt.Sub(start)), moved, victim.Name, ms(handledAt.Sub(noticeAt)),
		in.InterruptAt.Sub(handledAt).Round(time.Second), len(ledger.launched), d, orphans, leaked, len(exits), time.Since(stepStart).Round(100*time.Millisecond))
	for _, e := range exits {
		t.Logf("the controller exited at +%s (%s):\n%s", ms(e.at.Sub(stepStart)), e.err, e.logTail)
	}

	lab.Faults.setFaults(0, 0)
	sup.stop(t)
	sup = nil
	cleanUpArea(t, faultsPool, faultsApp)
}

// podNodes maps a node to the app's pods on it.
type podNodes map[string][]string

func podsByNode(t *testing.T, app string) podNodes {
	t.Helper()
	out := podNodes{}
	for _, p := range listPods(t, app) {
		if p.DeletionTimestamp.IsZero() && p.Spec.NodeName != "" {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p.Name)
		}
	}
	return out
}

// serviceRetries are one service's retries in the controller's metric.
type serviceRetries struct {
	total    float64
	byReason map[string]float64
}

// retriesByService sums nodesmith_cloud_api_retries_total by its service
// label, and by reason within each service.
func retriesByService(t *testing.T, page string) map[string]serviceRetries {
	t.Helper()
	samples, err := metricSamples(page, "nodesmith_cloud_api_retries_total")
	if err != nil {
		t.Fatalf("the controller's retry metric: %v", err)
	}
	out := map[string]serviceRetries{}
	for _, s := range samples {
		svc, reason := labelValue(s.labels, "service"), labelValue(s.labels, "reason")
		r := out[svc]
		if r.byReason == nil {
			r.byReason = map[string]float64{}
		}
		r.total += s.value
		r.byReason[reason] += s.value
		out[svc] = r
	}
	return out
}

// sumSamples adds a metric's samples whose labels contain match.
func sumSamples(t *testing.T, page, name, match string) float64 {
	t.Helper()
	samples, err := metricSamples(page, name)
	if err != nil {
		return 0
	}
	total := 0.0
	for _, s := range samples {
		if strings.Contains(s.labels, match) {
			total += s.value
		}
	}
	return total
}

// labelValue reads one label's value from a sample's {a="x",b="y"}.
func labelValue(labels, name string) string {
	i := strings.Index(labels, name+`="`)
	if i < 0 {
		return ""
	}
	rest := labels[i+len(name)+2:]
	v, err := strconv.Unquote(`"` + rest[:strings.Index(rest, `"`)] + `"`)
	if err != nil {
		return rest[:strings.Index(rest, `"`)]
	}
	return v
}
