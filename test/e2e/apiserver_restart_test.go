package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/labkit"
)

// The API-server-restart area: its NodePool, EC2NodeClass and Deployment.
const (
	restartPool = "apiserver-restart"
	restartApp  = "apiserver-restart"
	restartPods = 200
	// apiserverDown is how long after the stop kube-apiserver is started
	// again; its start takes 5-10 s more on the shared machine, so the API
	// is unreachable for 15-20 s: longer than the controller's leader-
	// election renew deadline (10 s), so the leader loses its lease, as it
	// would in a control-plane upgrade that takes a while.
	apiserverDown = 10 * time.Second
	// apiserverGrace is how long kube-apiserver may take to shut down
	// after SIGTERM before it is killed: with the lab's clients connected
	// it can wait the full request timeout (60 s) for in-flight requests.
	apiserverGrace = 10 * time.Second
)

// apiserverRestart runs the controller as the chart does (leader election
// on, one replica, under a supervisor that restarts it like a Deployment
// would), starts a 100-pod scale-up, and once its first launch is out asks
// for 200 and stops kube-apiserver for 15-20 s (etcd, kube-scheduler, kube-controller-manager,
// KWOK and the simulated AWS keep running) and starts it again on the same
// port and certificates. The controller must finish the job: all pods
// Running, every claim initialized, no duplicate or leaked instance, no
// claim deleted; whether the process kept running or exited and was
// restarted is reported. The other control-plane components must still be
// running afterwards (the next step uses them).
func apiserverRestart(t *testing.T) {
	w := watchFleet()
	defer w.stop()
	var sup *supervisor
	down := false
	defer func() {
		if down {
			// The step failed with the API server stopped: the steps after
			// it share the control plane.
			if err := lab.Env.StartAPIServer(); err != nil {
				t.Errorf("starting kube-apiserver again after a failed step: %v", err)
			}
		}
		if sup != nil {
			sup.stop(t)
		}
		if t.Failed() {
			cleanUpArea(t, restartPool, restartApp)
		}
	}()
	noRefusals(t)
	applyAreaPool(t, restartPool)
	sup = superviseController(t, "--leader-elect=true", "--leader-election-namespace="+labkit.ChartNamespace)
	waitFor(t, time.Minute, "the controller to take the lease", func() error {
		if h, _ := leaseHolder(); h == "" {
			return fmt.Errorf("lease %s not held", leaseKey)
		}
		return nil
	})
	holderBefore, _ := leaseHolder()

	// Half the pods first; once their first launch is out (its instances
	// still booting, no node registered) the other half is asked for and
	// the API server goes down at once: launched claims to register and
	// initialize, pods the ReplicaSet has yet to create, a batch to plan.
	ledger := newClaimLedger(restartPool)
	start := time.Now()
	if err := kube().Create(ctx(), deployment(restartApp, restartPool, restartPods/2, "500m", "128Mi")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the first launch", func() error {
		ledger.observe(t)
		if len(lab.Fleets.since(start)) == 0 {
			return fmt.Errorf("no CreateFleet yet")
		}
		return nil
	})
	resize(t, restartApp, restartPods)
	running, pending, _ := podsOf(t, restartApp)
	claimsBefore := len(claimsOf(t, restartPool))

	// Down. The lab's own checks stay off the API until it is back.
	stopAt := time.Now()
	frontRefusals := lab.Env.FrontRefusals()
	down = true
	killed, err := lab.Env.StopAPIServer(apiserverGrace)
	if err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	lastWords := lab.Env.APIServerLogTail(12)
	time.Sleep(apiserverDown - stoppedAt.Sub(stopAt))
	launchesWhileDown := len(lab.Fleets.since(stoppedAt))
	startCalled := time.Now()
	if err := lab.Env.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	down = false
	backAt := time.Now()

	waitFor(t, 5*time.Minute, fmt.Sprintf("%d pods running after the restart", restartPods), func() error {
		ledger.observe(t)
		return allRunning(t, restartApp, restartPods)()
	})
	allRunningAt := time.Now()
	settle(t, restartPool, map[string]int{restartApp: restartPods})
	ledger.observe(t)
	stuck := 0
	for _, c := range claimsOf(t, restartPool) {
		if !meta.IsStatusConditionTrue(c.Status.Conditions, nsv1.ConditionInitialized) || !c.DeletionTimestamp.IsZero() {
			stuck++
		}
	}
	if stuck > 0 {
		t.Errorf("%d nodeclaims not initialized or still deleting", stuck)
	}
	unlaunched, launched, nodes := ledger.gone(t, nil)
	for _, c := range append(unlaunched, launched...) {
		t.Errorf("nodeclaim %s was deleted during a scale-up the API server restart interrupted", c)
	}
	for _, n := range nodes {
		t.Errorf("node %s was deleted during the scale-up", n)
	}
	instancesOfClaimsLive(t, restartPool)
	d, detail := w.duplicates()
	if d > 0 {
		t.Errorf("%d claims with two live instances: %s", d, detail)
	}
	orphans, leaked := w.orphans(start), leaks(t)
	if leaked > 0 {
		t.Errorf("%d live instances no claim names", leaked)
	}
	if exited := lab.Env.Exited(); len(exited) > 0 {
		t.Errorf("control-plane components exited across the API server restart: %s", strings.Join(exited, "; "))
	}
	holderAfter, _ := leaseHolder()
	exits := sup.restarts()
	how := "stopped (SIGTERM)"
	if killed {
		how = fmt.Sprintf("killed (SIGKILL, still running %s after SIGTERM)", apiserverGrace)
	}
	outcome := "the controller process kept running"
	if len(exits) > 0 {
		outcome = fmt.Sprintf("the controller exited %d times (first at +%s after the stop: %s) and the supervisor restarted it", len(exits),
			ms(exits[0].at.Sub(stopAt)), exits[0].err)
	}
	t.Logf("API server %s, down %s (stop took %s, start %s) with %d of %d pods running, %d pending, %d nodeclaims; %d CreateFleet calls while it was down; %s; lease %q before, %q after",
		how, ms(backAt.Sub(stopAt)), ms(stoppedAt.Sub(stopAt)), ms(backAt.Sub(startCalled)), running, restartPods, pending, claimsBefore,
		launchesWhileDown, outcome, holderBefore, holderAfter)
	t.Logf("recovery: all %d pods Running %s after the API server was back (%s after the Deployment), %d CreateFleet calls after it was back; %d nodeclaims, %d stuck, %d duplicates, %d GC'd, %d leaks",
		restartPods, ms(allRunningAt.Sub(backAt)), ms(allRunningAt.Sub(start)), len(lab.Fleets.since(backAt)), len(claimsOf(t, restartPool)), stuck, d, orphans, leaked)
	t.Logf("the lab's API front (a load balancer that forwards only while /readyz passes) closed %d connections while kube-apiserver was down or not yet ready",
		lab.Env.FrontRefusals()-frontRefusals)
	if killed {
		t.Logf("kube-apiserver's last words before SIGKILL:\n%s", lastWords)
	}
	for _, e := range exits {
		t.Logf("controller exit at +%s after the stop (%s):\n%s", ms(e.at.Sub(stopAt)), e.err, e.logTail)
	}
	sup.stop(t)
	sup = nil
	cleanUpArea(t, restartPool, restartApp)
}
