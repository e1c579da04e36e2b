package e2e

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/labkit"
)

// leaseKey is the controller's leader election Lease (cmd/controller/main.go).
var leaseKey = client.ObjectKey{Namespace: labkit.ChartNamespace, Name: "nodesmith-controller"}

func lease() coordinationv1.Lease {
	var l coordinationv1.Lease
	_ = kube().Get(ctx(), leaseKey, &l)
	return l
}

func leaseHolder() (string, time.Duration) {
	l := lease()
	holder, d := "", time.Duration(0)
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return holder, d
}

// failoverAndThrottling runs two replicas with leader election and kills the
// leader mid-scale-up, then scales up with 30 % of the EC2 calls throttled.
// The lab's single controller (no leader election) is back at the end.
func failoverAndThrottling(t *testing.T) {
	var rows []crashRow
	defer func() { logCrashTable(t, "leader failover and AWS throttling", rows) }()
	w := watchFleet()
	defer w.stop()
	leaderFlags := []string{"--leader-elect=true", "--leader-election-namespace=" + labkit.ChartNamespace}
	// Whatever happens, the lab's single controller is back at the end.
	var procs []*labkit.Controller
	defer func() {
		lab.Faults.setFaults(0, 0)
		lab.World.SetLatency(0)
		for _, p := range procs {
			p.Stop()
		}
		if err := lab.startController(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			cleanUp(t, "crash-failover", "crash-throttled")
		}
	}()

	// Failover.
	lab.controller.Stop()
	first, err := lab.SpawnController(leaderFlags...)
	if err != nil {
		t.Fatal(err)
	}
	procs = append(procs, first)
	lab.controller = first
	var holder string
	var leaseDuration time.Duration
	waitFor(t, time.Minute, "the first replica to take the lease", func() error {
		if holder, leaseDuration = leaseHolder(); holder == "" {
			return fmt.Errorf("lease %s not held", leaseKey)
		}
		return nil
	})
	// Started once the first leads, so the first is the leader.
	second, err := lab.SpawnController(leaderFlags...)
	if err != nil {
		t.Fatal(err)
	}
	procs = append(procs, second)
	const app = "crash-failover"
	start := time.Now()
	if err := kube().Create(ctx(), deployment(app, "spot", 100, "500m", "128Mi")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the leader's first launch", func() error {
		if len(lab.Fleets.since(start)) == 0 {
			return fmt.Errorf("no CreateFleet yet")
		}
		return nil
	})
	running, _, _ := podsOf(t, app)
	first.Kill()
	killedAt := time.Now()
	lastRenew := lease().Spec.RenewTime // the dead leader's last renewal
	lab.controller = second
	var takeover, sinceRenew time.Duration
	waitFor(t, 2*time.Minute, "the second replica to take the lease", func() error {
		l := lease()
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == holder || *l.Spec.HolderIdentity == "" {
			return fmt.Errorf("lease still held by %q", holder)
		}
		takeover = time.Since(killedAt)
		if lastRenew != nil && l.Spec.AcquireTime != nil {
			sinceRenew = l.Spec.AcquireTime.Sub(lastRenew.Time)
		}
		return nil
	})
	takenAt := time.Now()
	// Nobody launches while nobody leads: the standby waits for the lease.
	for _, f := range lab.Fleets.since(killedAt) {
		if f.At.Before(takenAt.Add(-time.Second)) {
			t.Errorf("a CreateFleet at +%s after the leader was killed, before the standby took the lease at +%s",
				f.At.Sub(killedAt).Round(100*time.Millisecond), takeover.Round(100*time.Millisecond))
		}
	}
	// The standby waits for the killed leader's lease to expire, then
	// retries every 2 s: within the lease duration of the last renewal. The
	// bound allows twice that for a loaded machine.
	if takeover > 2*leaseDuration {
		t.Errorf("the standby took the lease %s after the leader died; the lease lasts %s", takeover, leaseDuration)
	}
	settle(t, spotPool, map[string]int{app: 100})
	d, detail := w.duplicates()
	if d > 0 {
		t.Errorf("leader failover: %d claims with two live instances: %s", d, detail)
	}
	rows = append(rows, crashRow{scenario: "leader killed mid-scale-up (100 pods)", kills: 1, recovered: time.Since(killedAt),
		dups: d, orphans: w.orphans(start), leaks: leaks(t),
		note: fmt.Sprintf("%d pods running at the kill; standby leads %s after it, %s after the last renewal (lease %s)", running, takeover.Round(100*time.Millisecond), sinceRenew.Round(100*time.Millisecond), leaseDuration)})

	// A rolling upgrade: a new replica starts, the leader is stopped
	// gracefully (SIGTERM) while a scale-up is pending. The leader hands
	// the Lease back as it stops, so the new replica leads within its
	// 2 s retry, not after the 15 s lease; nobody launches twice.
	third, err := lab.SpawnController(leaderFlags...)
	if err != nil {
		t.Fatal(err)
	}
	procs = append(procs, third)
	leader, _ := leaseHolder()
	waitFor(t, time.Minute, "the new replica to wait for the lease", func() error {
		if b, _ := os.ReadFile(third.LogPath); !strings.Contains(strings.ToLower(string(b)), "attempting to acquire leader lease") {
			return fmt.Errorf("no attempt to acquire the lease in its log yet")
		}
		return nil
	})
	handoverStart := time.Now()
	resize(t, app, 160)
	second.Stop()
	stoppedIn := time.Since(handoverStart)
	lab.controller = third
	var handover time.Duration
	waitFor(t, time.Minute, "the new replica to take the lease", func() error {
		if h, _ := leaseHolder(); h == "" || h == leader {
			return fmt.Errorf("lease held by %q", h)
		}
		handover = time.Since(handoverStart)
		return nil
	})
	// Without the hand-back the new replica waits out the lease (≥ 15 s
	// after the last renewal, as the kill above shows): a hand-over within
	// the lease duration is the proof it was handed back.
	if handover >= leaseDuration {
		t.Errorf("the new replica took the lease %s after the graceful stop began (the leader took %s to stop); a released lease is taken within a 2 s retry, an expired one after %s",
			handover.Round(100*time.Millisecond), stoppedIn.Round(100*time.Millisecond), leaseDuration)
	}
	settle(t, spotPool, map[string]int{app: 160})
	d, detail = w.duplicates()
	if d > 0 {
		t.Errorf("graceful hand-over: %d claims with two live instances: %s", d, detail)
	}
	rows = append(rows, crashRow{scenario: "leader stopped gracefully mid-scale-up (100 → 160 pods)", kills: 0, recovered: time.Since(handoverStart),
		dups: d, orphans: w.orphans(start), leaks: leaks(t),
		note: fmt.Sprintf("the leader stopped in %s; the new replica leads %s after SIGTERM (lease %s)", stoppedIn.Round(100*time.Millisecond), handover.Round(100*time.Millisecond), leaseDuration)})
	cleanUp(t, app)
	third.Stop()
	first.Stop()

	// Throttling: a single controller whose metrics the lab can read.
	port := freePort(t)
	throttled, err := lab.SpawnController("--metrics-bind-address=127.0.0.1:" + strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	procs = append(procs, throttled)
	lab.controller = throttled
	// 30 % of EC2 calls throttled, 5 % of the rest answered 500, every
	// answer 20 ms late.
	const share, errShare = 0.3, 0.05
	lab.Faults.setFaults(share, errShare)
	lab.World.SetLatency(20 * time.Millisecond)
	checkFaultsOnTheWire(t, share, errShare)
	lab.Faults.setFaults(share, errShare) // count the controller's calls only
	const tapp = "crash-throttled"
	start = time.Now()
	dupsBefore, _ := w.duplicates()
	// The first CreateFleet is throttled twice whatever the dice say (the
	// fake's own injector), so a launch's retry is always exercised.
	lab.World.InjectThrottle("CreateFleet", 2)
	// Ten pods more every 2 s: ten batches, so ten launches or more face the
	// throttle, not the one or two a single batch of 100 pods needs.
	if err := kube().Create(ctx(), deployment(tapp, "spot", 10, "500m", "128Mi")); err != nil {
		t.Fatal(err)
	}
	for n := 20; n <= 100; n += 10 {
		time.Sleep(2 * time.Second)
		resize(t, tapp, n)
	}
	// Every claim seen, and whether it had an instance: a claim that goes
	// away without one was given up because AWS said no.
	seen := map[string]bool{}
	waitFor(t, 5*time.Minute, "100 pods running under 30 % throttling", func() error {
		for _, c := range claimsOf(t, spotPool) {
			seen[c.Name] = seen[c.Name] || c.Status.ProviderID != ""
		}
		return allRunning(t, tapp, 100)()
	})
	var lost []string
	current := map[string]bool{}
	for _, c := range claimsOf(t, spotPool) {
		current[c.Name] = true
	}
	for name, launched := range seen {
		if !current[name] && !launched {
			lost = append(lost, name)
		}
	}
	if len(lost) > 0 {
		t.Errorf("nodeclaims deleted before they launched while AWS throttled: %v", lost)
	}
	calls, n, failed, by := lab.Faults.counts()
	retries, retrySeries, metricsErr := scrapeRetries(port)
	lab.Faults.setFaults(0, 0)
	lab.World.SetLatency(0)
	settle(t, spotPool, map[string]int{tapp: 100})
	d, detail = w.duplicates()
	if d > dupsBefore {
		t.Errorf("throttling: %d claims with two live instances: %s", d-dupsBefore, detail)
	}
	var byAction []string
	for a, c := range by {
		byAction = append(byAction, fmt.Sprintf("%s %d", a, c))
	}
	sort.Strings(byAction)
	retryNote := fmt.Sprintf("controller metric nodesmith_cloud_api_retries_total: %v (%s)", retries, retrySeries)
	if metricsErr != nil {
		retryNote = "controller metrics unreachable: " + metricsErr.Error()
		t.Errorf("reading the controller's retry count: %v", metricsErr)
	} else if retries == 0 {
		t.Errorf("the controller counted no retry although %d EC2 calls were throttled", n)
	}
	t.Logf("30 %% throttling, 5 %% errors, 20 ms latency: %d EC2 calls, %d answered RequestLimitExceeded (%s), %d InternalError, 2 more CreateFleet throttled by the fake; %s; %d nodeclaims, %d deleted before launch; all 100 pods Running %s after the Deployment",
		calls, n, strings.Join(byAction, ", "), failed, retryNote, len(seen), len(lost), time.Since(start).Round(100*time.Millisecond))
	rows = append(rows, crashRow{scenario: "100 pods, 30 % EC2 throttled, 5 % 500s", recovered: 0,
		dups: d - dupsBefore, orphans: w.orphans(start), leaks: leaks(t),
		note: fmt.Sprintf("%d+%d of %d EC2 calls failed, %v SDK retries, %d claims lost", n, failed, calls, retries, len(lost))})
	cleanUp(t, tapp)
}

// checkFaultsOnTheWire reads the injector's answers with the AWS SDK (no
// retries): the throttles must parse as RequestLimitExceeded on HTTP 503
// and be what the SDK's retryer classes as throttling, the errors as a
// retryable InternalError, each in about its share of 300 calls (binomial:
// the bounds are four standard deviations out).
func checkFaultsOnTheWire(t *testing.T, share, errShare float64) {
	t.Helper()
	c := ec2.NewFromConfig(aws.Config{Region: labRegion,
		Credentials: credentials.NewStaticCredentialsProvider("lab", "lab", ""),
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} }},
		func(o *ec2.Options) { o.BaseEndpoint = aws.String(lab.AWSURL) })
	const calls = 300
	throttles, errs := 0, 0
	for range calls {
		_, err := c.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)})
		if err == nil {
			continue
		}
		var ae smithy.APIError
		var re *awshttp.ResponseError
		if !errors.As(err, &ae) || !errors.As(err, &re) {
			t.Fatalf("an injected fault the SDK cannot read: %v", err)
		}
		switch {
		case ae.ErrorCode() == "RequestLimitExceeded" && re.HTTPStatusCode() == http.StatusServiceUnavailable &&
			retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary:
			throttles++
		case ae.ErrorCode() == "InternalError" && re.HTTPStatusCode() == http.StatusInternalServerError &&
			retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary:
			errs++
		default:
			t.Fatalf("unexpected answer through the fault injector: %v", err)
		}
	}
	within := func(n int, p float64) bool {
		mean, sd := calls*p, math.Sqrt(calls*p*(1-p))
		return math.Abs(float64(n)-mean) <= 4*sd
	}
	if !within(throttles, share) || !within(errs, (1-share)*errShare) {
		t.Errorf("%d throttles and %d errors in %d calls; want shares %.2f and %.3f", throttles, errs, calls, share, (1-share)*errShare)
	}
	t.Logf("fault injector read by the AWS SDK: %d of %d calls RequestLimitExceeded (HTTP 503, a throttle to the retryer), %d InternalError (HTTP 500, retryable)", throttles, calls, errs)
}

// scrapeRetries sums the controller's nodesmith_cloud_api_retries_total
// and lists its non-zero series.
func scrapeRetries(port int) (float64, string, error) {
	page, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return 0, "", err
	}
	samples, err := metricSamples(page, "nodesmith_cloud_api_retries_total")
	if err != nil {
		return 0, "", err
	}
	total := 0.0
	var series []string
	for _, sm := range samples {
		total += sm.value
		if sm.value > 0 {
			series = append(series, sm.labels+" "+strconv.FormatFloat(sm.value, 'g', -1, 64))
		}
	}
	return total, strings.Join(series, " "), nil
}
