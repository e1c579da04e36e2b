package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/test/testenv"
)

// The interruption area of the lab: its own namespace, NodePool and
// EC2NodeClass, and a work queue on the simulated SQS.
const (
	intrNS        = "interruption"
	intrPool      = "interruption-spot"
	intrClass     = "interruption"
	intrFleet     = "interruption"
	intrWorker    = "sqs-worker"
	intrWorkQueue = "interruption-work"
	intrReplicas  = 50
	intrMessages  = 500
	// intrProcessing is the example worker's time per message here (20 s
	// in its manifest): 50 workers get through 500 messages in 20 s, so
	// work is in hand when the notices come and the step stays short.
	intrProcessing = 2 * time.Second
	labAccount     = "123456789012"

	// replacementWithin is the bound from a notice's receipt to its
	// replacement NodeClaim; the lab asserts it with replacementMargin on
	// top, because two cores shared with other jobs stall any process for
	// a second now and then. The figures logged are the measured ones.
	replacementWithin = time.Second
	replacementMargin = 2 * time.Second
)

// applyInterruptionPool creates the area's namespace and a NodePool and
// EC2NodeClass copied from the lab's spot fleet, with large and xlarge
// instances only (so 50 workers spread over several nodes), consolidation
// of empty nodes only (no underutilized node is drained while the
// interruption is measured) and no budget in the way.
func applyInterruptionPool(t *testing.T) {
	t.Helper()
	c, p := fleetCopy(t, intrClass, intrPool, intrFleet, "5s", "large", "xlarge")
	p.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "100%"}}
	createAreaPool(t, time.Minute, c, p, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: intrNS}})
}

// exampleWorker reads examples/workloads/sqs-worker/deployment.yaml and
// points it at the lab: the area's namespace and NodePool instead of the
// example's queue-worker pool, the work queue's URL, 2 s per message
// instead of 20 s, and the finalizer that hands its pods to the lab's
// process kubelet. Its grace period (60 s), requests and everything else
// are the example's.
func exampleWorker(t *testing.T, queueURL string, replicas int32) (*appsv1.Deployment, *corev1.ServiceAccount) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "workloads", "sqs-worker", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d *appsv1.Deployment
	var sa *corev1.ServiceAccount
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		switch {
		case bytes.Contains(doc, []byte("\nkind: Deployment")):
			d = &appsv1.Deployment{}
			if err := yaml.UnmarshalStrict(doc, d); err != nil {
				t.Fatalf("reading the example Deployment: %v", err)
			}
		case bytes.Contains(doc, []byte("\nkind: ServiceAccount")):
			sa = &corev1.ServiceAccount{}
			if err := yaml.UnmarshalStrict(doc, sa); err != nil {
				t.Fatalf("reading the example ServiceAccount: %v", err)
			}
		}
	}
	if d == nil || sa == nil {
		t.Fatal("the example worker manifest lacks its Deployment or ServiceAccount")
	}
	d.Namespace, sa.Namespace = intrNS, intrNS
	d.Spec.Replicas = ptr.To(replicas)
	tmpl := &d.Spec.Template
	tmpl.Spec.NodeSelector = map[string]string{"fleet": intrFleet}
	tmpl.Finalizers = []string{workerFinalizer}
	ctr := &tmpl.Spec.Containers[0]
	ctr.Args = []string{"--processing-time=" + intrProcessing.String()}
	for i := range ctr.Env {
		if ctr.Env[i].Name == "QUEUE_URL" {
			ctr.Env[i].Value = queueURL
		}
	}
	return d, sa
}

// workerPods lists the area's worker pods.
func workerPods(t *testing.T) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := kube().List(ctx(), &pods, client.InNamespace(intrNS), client.MatchingLabels{"app": intrWorker}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// workersSettled: want pods Running and not terminating, none on the
// listed nodes, and a process for each.
func workersSettled(t *testing.T, k *processKubelet, want int, avoid map[string]bool) func() error {
	return func() error {
		running, deleting := 0, 0
		for _, p := range workerPods(t) {
			switch {
			case !p.DeletionTimestamp.IsZero():
				deleting++
			case p.Status.Phase == corev1.PodRunning && !avoid[p.Spec.NodeName]:
				running++
			}
		}
		procs := 0
		for node, n := range k.runningOn() {
			if !avoid[node] {
				procs += n
			}
		}
		if running != want || deleting > 0 || procs != want {
			return fmt.Errorf("%d of %d workers running where wanted, %d terminating, %d processes", running, want, deleting, procs)
		}
		return nil
	}
}

// restartController runs the controller again consuming the lab's
// interruption queue, with extra flags and the metrics endpoint on a free
// loopback port, which it returns once the queue answers. The queue holds
// the state changes of the steps before (nobody consumed them); the
// handler ignores them, as it does the notices about instances that are
// not the cluster's. restoreController brings back the lab's own flags.
func restartController(t *testing.T, extra ...string) string {
	t.Helper()
	noRefusals(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	lab.controller.Stop()
	flags := append([]string{"--interruption-queue=" + labInterruptionQueue, "--metrics-bind-address=" + addr}, extra...)
	if err := lab.startController(flags...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the restarted controller's interruption queue", func() error {
		resp, err := httpGet("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		if !strings.Contains(resp, "nodesmith_interruption_queue_ready 1") {
			return fmt.Errorf("interruption queue not ready yet")
		}
		return nil
	})
	return addr
}

// noRefusals fails t, at its end, for every request the Terraform policy
// or the chart's RBAC refused the controller during the step.
func noRefusals(t *testing.T) {
	denied := lab.Perms.Count()
	logs := len(lab.ControllerLogs())
	t.Cleanup(func() {
		for _, d := range lab.Perms.DeniedSince(denied) {
			t.Errorf("the Terraform policy refused %s on %s", d.Action, d.Resource)
		}
		for _, log := range lab.ControllerLogs()[logs:] {
			for _, f := range forbidden(log) {
				t.Errorf("the chart's RBAC refused %s", f)
			}
		}
	})
}

// restoreController puts the lab's controller back to its own flags.
func restoreController(t *testing.T) {
	lab.controller.Stop()
	if err := lab.startController(); err != nil {
		t.Fatal(err)
	}
}

func instanceOf(c *nsv1.NodeClaim) string {
	return c.Status.ProviderID[strings.LastIndex(c.Status.ProviderID, "/")+1:]
}

// ebMessage is an EventBridge event as it reaches SQS.
func ebMessage(id, detailType string, at time.Time, instance string, detail map[string]string) string {
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": id, "detail-type": detailType, "source": "aws.ec2", "account": labAccount,
		"time": at.UTC().Format(time.RFC3339), "region": labRegion,
		"resources": []string{fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", labRegion, labAccount, instance)},
		"detail":    detail,
	})
	return string(b)
}

// noise puts on the interruption queue what a real one carries beside the
// notices: each victim's spot warning and rebalance recommendation again
// (same instance, time and detail; EventBridge and SQS deliver at least
// once), three malformed messages, an event type the handler does not act
// on, and a warning for an instance that is not the cluster's. It returns
// how many malformed and unknown messages it sent.
func noise(t *testing.T, round int, victims []string) (malformed, unknown int) {
	t.Helper()
	send := func(body string) {
		if _, err := lab.World.SendMessage(labInterruptionQueue, body); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range victims {
		in, ok := lab.World.Instance(id)
		if !ok || in.InterruptAt.IsZero() {
			t.Fatalf("instance %s has no interruption", id)
		}
		at := in.InterruptAt.Add(-fakeaws.InterruptionNotice)
		for copyN := range 2 {
			send(ebMessage(fmt.Sprintf("dup-%d-%d-%d", round, i, copyN), "EC2 Spot Instance Interruption Warning", at, id,
				map[string]string{"instance-id": id, "instance-action": "terminate"}))
		}
		send(ebMessage(fmt.Sprintf("dup-rebalance-%d-%d", round, i), "EC2 Instance Rebalance Recommendation", at, id,
			map[string]string{"instance-id": id}))
	}
	send("this is not an EventBridge event")
	send(`{"version":"0","id":"cut","detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":`)
	send(ebMessage(fmt.Sprintf("noid-%d", round), "EC2 Spot Instance Interruption Warning", time.Now(), "", map[string]string{"instance-action": "terminate"}))
	send(ebMessage(fmt.Sprintf("other-%d", round), "EC2 Fleet Instance Change", time.Now(), "i-0aaaaaaaaaaaaaaaa", map[string]string{"instance-id": "i-0aaaaaaaaaaaaaaaa"}))
	send(ebMessage(fmt.Sprintf("foreign-%d", round), "EC2 Spot Instance Interruption Warning", time.Now(), "i-0123456789abcdef0",
		map[string]string{"instance-id": "i-0123456789abcdef0", "instance-action": "terminate"}))
	return 3, 1
}

// queueEmpty: no visible, in-flight or delayed message.
func queueEmpty(name string) func() error {
	return func() error {
		if v, f, d := lab.World.QueueCounts(name); v+f+d > 0 {
			return fmt.Errorf("queue %s holds %d visible, %d in flight, %d delayed", name, v, f, d)
		}
		return nil
	}
}

// victim is an interrupted NodeClaim and what the lab saw of it.
type victim struct {
	claim, node, instance string
	sentAt                time.Time
	deadline              time.Time
	pods                  []string
}

// interruptionWave: 50 example workers on several spot nodes work off a
// queue of 1,000 messages; the simulated AWS interrupts three nodes at
// once, with duplicates and malformed messages mixed in. The replacements
// are created at once, no pod is evicted before its replacement capacity
// is ready, every worker finishes the message in hand, all 50 run elsewhere
// long before the two-minute deadline, every message is processed exactly
// once and both queues end empty.
func interruptionWave(t *testing.T) {
	stepStart := time.Now()
	addr := restartController(t)
	defer restoreController(t)
	applyInterruptionPool(t)
	obs := newObserver(t, intrNS)
	kl := startProcessKubelet(t, intrNS, intrWorker)
	defer kl.stop()

	lab.World.CreateQueue(intrWorkQueue, map[string]string{"VisibilityTimeout": "30"})
	sent := map[string]bool{}
	for i := range intrMessages {
		body := fmt.Sprintf("job-%04d", i)
		if _, err := lab.World.SendMessage(intrWorkQueue, body); err != nil {
			t.Fatal(err)
		}
		sent[body] = true
	}
	d, sa := exampleWorker(t, fmt.Sprintf("%s/%s/%s", kl.awsURL, labAccount, intrWorkQueue), intrReplicas)
	for _, o := range []client.Object{sa, d} {
		if err := kube().Create(ctx(), o); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 4*time.Minute, "50 workers running", workersSettled(t, kl, intrReplicas, nil))
	upAt := time.Now()

	// Three nodes that run workers, interrupted at once.
	byNode := map[string][]string{}
	for _, p := range workerPods(t) {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p.Name)
	}
	claims := claimsOf(t, intrPool)
	if len(claims) < 4 {
		t.Fatalf("the 50 workers run on %d nodes; want at least 4 so three can be interrupted", len(claims))
	}
	sort.Slice(claims, func(i, j int) bool { return claims[i].Name < claims[j].Name })
	byType := map[string]int{}
	for _, c := range claims {
		byType[c.Status.InstanceType]++
	}
	t.Logf("%d workers running after %s on %d nodes %v", intrReplicas, ms(upAt.Sub(stepStart)), len(claims), byType)
	existing := map[string]bool{}
	var victims []*victim
	for _, c := range claims {
		existing[c.Name] = true
		if len(victims) < 3 && len(byNode[c.Status.NodeName]) > 0 {
			victims = append(victims, &victim{claim: c.Name, node: c.Status.NodeName, instance: instanceOf(&c), pods: byNode[c.Status.NodeName]})
		}
	}
	if visible, _ := lab.World.QueueDepth(intrWorkQueue); visible == 0 {
		t.Fatal("the work queue ran dry before the interruption: nothing would be in flight")
	}
	noticeAt := time.Now()
	var ids []string
	affected := map[string]bool{}
	for _, v := range victims {
		if err := lab.World.Interrupt(v.instance); err != nil {
			t.Fatal(err)
		}
		v.sentAt = time.Now()
		in, _ := lab.World.Instance(v.instance)
		v.deadline = in.InterruptAt
		ids = append(ids, v.instance)
		affected[v.node] = true
	}
	deadline := victims[0].deadline
	malformed, unknown := noise(t, 1, ids)

	waitFor(t, fakeaws.InterruptionNotice, "the interrupted nodes drained and every worker running elsewhere", func() error {
		for _, v := range victims {
			if _, gone := obs.at(obs.claimGone, v.claim); !gone {
				return fmt.Errorf("nodeclaim %s still there", v.claim)
			}
		}
		return workersSettled(t, kl, intrReplicas, affected)()
	})
	settledAt := time.Now()
	if !settledAt.Before(deadline) {
		t.Errorf("the workers were all running elsewhere at %s, after the deadline %s", settledAt.Format(time.RFC3339Nano), deadline.Format(time.RFC3339Nano))
	}
	m2, u2 := noise(t, 2, ids) // now about claims that are gone
	malformed, unknown = malformed+m2, unknown+u2

	waitFor(t, 3*time.Minute, "every message processed", func() error {
		if err := queueEmpty(intrWorkQueue)(); err != nil {
			return err
		}
		if n := len(kl.snapshot().Processed); n != len(sent) {
			return fmt.Errorf("%d of %d messages processed", n, len(sent))
		}
		return nil
	})
	waitFor(t, time.Minute, "the interruption queue empty", queueEmpty(labInterruptionQueue))
	workDone := time.Now()
	m := scrape(t, addr)

	// Only the three victims were marked; the duplicates changed nothing.
	obs.mu.Lock()
	var disrupted []string
	for n := range obs.claimDisrupting {
		disrupted = append(disrupted, n)
	}
	obs.mu.Unlock()
	sort.Strings(disrupted)
	var victimNames []string
	names := map[string]bool{}
	for _, v := range victims {
		victimNames = append(victimNames, v.claim)
		names[v.claim] = true
	}
	if strings.Join(disrupted, ",") != strings.Join(victimNames, ",") {
		t.Errorf("claims marked Disrupting: %v; want exactly the interrupted %v", disrupted, victimNames)
	}
	if n := m.sum("nodesmith_interruptions_total", map[string]string{"nodepool": intrPool, "kind": "spot_interruption"}); n != 3 {
		t.Errorf("nodesmith_interruptions_total for spot warnings = %v, want 3 (duplicates must not count)", n)
	}
	ignored := m.byLabel("nodesmith_interruption_messages_ignored_total", "reason")
	if ignored["malformed"] < float64(malformed) || ignored["unknown_event"] < float64(unknown) || ignored["not_managed"] < 2 {
		t.Errorf("ignored messages by reason %v; sent %d malformed, %d of unknown type and 2 about a foreign instance", ignored, malformed, unknown)
	}
	if n := m.sum("nodesmith_interruption_message_errors_total", nil); n != 0 {
		t.Errorf("%v interruption messages failed and were left for redelivery", n)
	}

	// Per victim: message → taint, replacement ready before any eviction.
	evs := eventsAbout(t, names, "SpotInterruption", "ReplacementPlanned", "InterruptionDrain")
	var earliestNotice time.Time
	replacements := map[string]bool{}
	for _, v := range victims {
		c := obs.markedCopy(v.claim)
		if c == nil {
			t.Fatalf("nodeclaim %s never seen with a disruption deadline", v.claim)
		}
		noticed, err := time.Parse(time.RFC3339Nano, c.Annotations[nsv1.AnnotationDisruptionNoticed])
		if err != nil {
			t.Fatalf("nodeclaim %s: notice time %q: %v", v.claim, c.Annotations[nsv1.AnnotationDisruptionNoticed], err)
		}
		if earliestNotice.IsZero() || noticed.Before(earliestNotice) {
			earliestNotice = noticed
		}
		if want := v.deadline.Add(-fakeaws.InterruptionNotice).Truncate(time.Second).Add(fakeaws.InterruptionNotice).UTC().Format(time.RFC3339); c.Annotations[nsv1.AnnotationDisruptionDeadline] != want {
			t.Errorf("nodeclaim %s deadline %q, want %s from the warning's time", v.claim, c.Annotations[nsv1.AnnotationDisruptionDeadline], want)
		}
		tainted, ok := obs.at(obs.nodeTainted, v.node)
		if !ok {
			t.Errorf("node %s was never seen tainted", v.node)
		}
		var drainNote string
		var targets map[string]int
		for _, e := range evs {
			if e.Name != v.claim || e.Kind != "NodeClaim" {
				continue
			}
			switch e.Reason {
			case "ReplacementPlanned":
				targets = plannedTargets(e.Note)
			case "InterruptionDrain":
				drainNote = e.Note
			}
		}
		forced := !strings.Contains(drainNote, "replacement capacity ready") && !strings.Contains(drainNote, "replacement ready")
		if drainNote == "" || len(targets) == 0 {
			t.Errorf("nodeclaim %s: no InterruptionDrain (%q) or ReplacementPlanned (%v) Event", v.claim, drainNote, targets)
		}
		evicted, pod, ok := obs.firstEviction(v.node)
		if !ok {
			t.Errorf("no worker pod on %s was seen evicted", v.node)
		}
		var readyAt time.Time
		for target := range targets {
			if !strings.HasPrefix(target, intrPool+"-") {
				continue // room on a node that was already running
			}
			// A claim that existed before the notice but had no node yet
			// (launched for pods kube-scheduler put elsewhere) is room in
			// flight, which the planner rightly fills first; it must still be
			// ready before the drain.
			if !existing[target] {
				replacements[target] = true
			}
			at, ok := obs.at(obs.claimInitialized, target)
			if !ok {
				t.Errorf("replacement %s of %s was never seen initialized", target, v.claim)
				continue
			}
			if at.After(readyAt) {
				readyAt = at
			}
		}
		if !forced && evicted.Before(readyAt) {
			t.Errorf("pod %s on %s evicted at %s, before its replacement capacity was ready at %s", pod, v.node,
				evicted.Format("15:04:05.000"), readyAt.Format("15:04:05.000"))
		}
		if forced {
			t.Logf("nodeclaim %s was drained by its deadline, not on a ready replacement: %s", v.claim, drainNote)
		}
		gone, _ := obs.at(obs.claimGone, v.claim)
		t.Logf("%s (%s, %d workers): sent→received %s, received→taint %s, →replacement ready %s, →first eviction %s, →claim gone %s; replacements %v; %s",
			v.claim, v.instance, len(v.pods), ms(noticed.Sub(v.sentAt)), ms(tainted.Sub(noticed)), ms(readyAt.Sub(noticed)),
			ms(evicted.Sub(noticed)), ms(gone.Sub(noticed)), targets, drainNote)
	}
	// The replacements: created within 1 s (+ margin) of the first receipt.
	newClaims := obs.addedAfter(noticeAt, existing)
	if len(replacements) == 0 {
		t.Errorf("no replacement NodeClaim was planned for the interrupted nodes' pods (new claims: %v)", newClaims)
	}
	var slowest time.Duration
	for _, n := range newClaims {
		at, _ := obs.at(obs.claimAdded, n)
		lat := at.Sub(earliestNotice)
		slowest = max(slowest, lat)
		if lat > replacementWithin+replacementMargin {
			t.Errorf("replacement %s created %s after the notice was received; want within %s (+%s margin on a shared machine)", n, ms(lat), replacementWithin, replacementMargin)
		}
	}

	// The workers: every message processed exactly once, every affected
	// worker ended on SIGTERM with no message in hand, none killed.
	snap := kl.snapshot()
	dupes, foreign := 0, 0
	for body, n := range snap.Processed {
		if !sent[body] {
			foreign++
		} else if n != 1 {
			dupes++
		}
	}
	if dupes > 0 || foreign > 0 || len(snap.Processed) != len(sent) {
		t.Errorf("processed %d distinct messages of %d sent; %d processed more than once, %d unknown", len(snap.Processed), len(sent), dupes, foreign)
	}
	evictedWorkers, killed, lostWork := 0, 0, 0
	for _, p := range snap.Exits {
		if p.killed {
			killed++
		}
		if !affected[p.node] {
			continue
		}
		evictedWorkers++
		if !p.graceful() || p.inHand != "" {
			lostWork++
			t.Errorf("worker %s on interrupted node %s: SIGTERM at %v, killed %v, message in hand %q", p.pod, p.node, !p.termAt.IsZero(), p.killed, p.inHand)
		}
	}
	if want := wantEvicted(victims); evictedWorkers != want || killed > 0 {
		t.Errorf("%d workers on the interrupted nodes exited (want %d); %d processes were killed", evictedWorkers, want, killed)
	}

	// The instances: terminated by the controller once drained, each
	// before AWS would have reclaimed it.
	beforeDeadline := 0
	var terminatedAt []string
	for _, v := range victims {
		in, ok := lab.World.Instance(v.instance)
		switch {
		case !ok:
			t.Errorf("instance %s is gone from the simulated EC2", v.instance)
		case in.State != fakeaws.StateShuttingDown && in.State != fakeaws.StateTerminated:
			t.Errorf("instance %s is %s after its node was drained", v.instance, in.State)
		case !in.StateChangedAt.Before(v.deadline):
			t.Errorf("instance %s was %s at %s, not before its deadline %s", v.instance, in.State,
				in.StateChangedAt.Format("15:04:05.000"), v.deadline.Format("15:04:05.000"))
		default:
			beforeDeadline++
			terminatedAt = append(terminatedAt, fmt.Sprintf("%s %s at notice+%s", v.instance, in.State, ms(in.StateChangedAt.Sub(v.sentAt))))
		}
	}

	// The wave's figures, from the notices being sent (the test's clock).
	var firstCreated, lastCreated, lastReady time.Duration
	for i, n := range newClaims {
		at, _ := obs.at(obs.claimAdded, n)
		if d := at.Sub(noticeAt); i == 0 || d < firstCreated {
			firstCreated = d
		}
		lastCreated = max(lastCreated, at.Sub(noticeAt))
	}
	for r := range replacements {
		if at, ok := obs.at(obs.claimInitialized, r); ok {
			lastReady = max(lastReady, at.Sub(noticeAt))
		}
	}
	t.Logf("wave of 3 spot interruption warnings (%d workers on the interrupted nodes): notice→replacement created %s (first) to %s (last of %d); notice→replacements Ready %s; notice→all %d workers Running again %s; pods that lost work %d (killed or exited with a message in hand), messages processed twice %d; instances terminated before the 2-minute deadline %d of %d (%s)",
		wantEvicted(victims), ms(firstCreated), ms(lastCreated), len(newClaims), ms(lastReady), intrReplicas, ms(settledAt.Sub(noticeAt)),
		lostWork, dupes, beforeDeadline, len(victims), strings.Join(terminatedAt, ", "))

	tc, ts, tmax := m.histogram("nodesmith_interruption_taint_duration_seconds")
	rc, rs, rmax := m.histogram("nodesmith_interruption_replacement_duration_seconds")
	dc, dsum, dmax := m.histogram("nodesmith_interruption_drain_duration_seconds")
	recv := m.byLabel("nodesmith_interruption_messages_received_total", "kind")
	del := m.byLabel("nodesmith_interruption_messages_deleted_total", "kind")
	t.Logf("metrics: received→taint n=%d mean %s (≤ %gs); received→all pods planned n=%d mean %s (≤ %gs); received→drained n=%d mean %s (≤ %gs)",
		tc, secs(ts, tc), tmax, rc, secs(rs, rc), rmax, dc, secs(dsum, dc), dmax)
	t.Logf("interruption queue: received by kind %v, deleted by kind %v, ignored by reason %v", recv, del, ignored)
	t.Logf("replacements: %d new NodeClaims %v, the slowest created %s after the first notice was received", len(newClaims), newClaims, ms(slowest))
	t.Logf("work queue: %d sent, %d processed (%d received by workers), %d workers evicted from the interrupted nodes and ended on SIGTERM, %d killed; all 50 running where wanted %s after the notice (deadline %s)",
		len(sent), len(snap.Processed), snap.Received, evictedWorkers, killed, ms(settledAt.Sub(noticeAt)), ms(deadline.Sub(noticeAt)))

	// Clean up: the workers stop on SIGTERM, the nodes go.
	if err := kube().Get(ctx(), client.ObjectKeyFromObject(d), d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr.To(int32(0))
	if err := kube().Update(ctx(), d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "every worker gone", func() error {
		if n := len(workerPods(t)); n > 0 {
			return fmt.Errorf("%d worker pods left", n)
		}
		return nil
	})
	for _, o := range []client.Object{d, sa} {
		if err := kube().Delete(ctx(), o); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 4*time.Minute, "the interruption pool drained", drained(t, intrPool))
	waitFor(t, time.Minute, "the interruption queue empty after clean-up", queueEmpty(labInterruptionQueue))
	t.Logf("step wall time %s (workers up after %s, work done %s after the notice)", ms(time.Since(stepStart)), ms(upAt.Sub(stepStart)), ms(workDone.Sub(noticeAt)))
}

// wantEvicted counts the workers the victims ran when the notices came.
func wantEvicted(victims []*victim) int {
	n := 0
	for _, v := range victims {
		n += len(v.pods)
	}
	return n
}

// ms prints a duration to the millisecond.
func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// secs is a histogram's mean as a duration.
func secs(sum float64, n uint64) string {
	if n == 0 {
		return "n/a"
	}
	return ms(time.Duration(sum / float64(n) * float64(time.Second)))
}
