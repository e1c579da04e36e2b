package e2e

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// The roll area of the lab: an AMI roll under a disruption budget and a
// forced expiry that a zero budget does not hold, each with its own
// NodePool and EC2NodeClass, in one namespace.
const (
	rollNS = "roll"
	// rollAMIPool's class selects images by rollImageTag; the step
	// publishes a newer image under that tag, as a golden-image pipeline
	// would, and every node must move to it.
	rollAMIPool   = "roll-ami"
	rollAMINodes  = 6
	rollAMIBudget = 2
	// rollExpirePool's nodes expire 2 minutes after they are made; its
	// budget allows no voluntary disruption, which must not hold expiry
	// (forceful since Karpenter v1).
	rollExpirePool   = "roll-expire"
	rollExpireAfter  = 2 * time.Minute
	rollExpireNodes  = 2
	rollExpireBudget = 0
	rollImageTag     = "nodesmith.sh/lab-roll"
	// rollPodCPU is more than half a large instance's allocatable cpu: one
	// pod per node, so every node holds a pod that must move and no pod
	// fits beside another (each disruption needs a replacement).
	rollPodCPU = "1200m"
)

// rollAMIAndExpire runs the AMI roll and the expiry side by side (they use
// separate pools; together they take the expiry's two minutes once), then
// checks the lab is empty again.
func rollAMIAndExpire(t *testing.T) {
	if err := kube().Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rollNS}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	t.Run("pools", func(t *testing.T) {
		t.Run("ami_roll", func(t *testing.T) { t.Parallel(); amiRoll(t) })
		t.Run("expire_after_2m", func(t *testing.T) { t.Parallel(); expireRoll(t) })
	})
	waitFor(t, 2*time.Minute, "the roll pools drained", drained(t, rollAMIPool, rollExpirePool))
}

// amiRoll: six nodes of a pool whose budget lets two be disrupted at once
// run one pod each of a Deployment whose PDB allows one pod down. A newer
// image is published under the class's AMI selector, and one more pod
// arrives at once (a node launched while the class's status still names the
// old image). Every node on the old image must be replaced, once, by one
// on the new image; no node on the new image is disrupted; never more than
// two at once, never more than one pod down; no instance left over.
func amiRoll(t *testing.T) {
	old := publishRollImages(t, time.Now().Add(-time.Hour))
	rollPool(t, rollAMIPool, []awsv1.AMISelectorTerm{{Tags: map[string]string{rollImageTag: "golden"}}}, func(p *nsv1.NodePool) {
		p.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: fmt.Sprint(rollAMIBudget)}}
	})
	rollWorkload(t, rollAMIPool, rollAMINodes)
	originals := waitRollNodes(t, rollAMIPool, rollAMINodes)
	for _, c := range originals {
		if !old[c.Status.ImageID] {
			t.Fatalf("nodeclaim %s runs image %q, not one of the first images %v", c.Name, c.Status.ImageID, keys(old))
		}
	}

	w := watchRoll(t, rollAMIPool)
	published := time.Now()
	fresh := publishRollImages(t, published)
	scaleIn(t, rollNS, rollAMIPool, rollAMINodes+1)
	var statusAt time.Time
	waitFor(t, 3*time.Minute, "the EC2NodeClass resolving the new images", func() error {
		nc := &awsv1.EC2NodeClass{}
		if err := kube().Get(ctx(), types.NamespacedName{Name: rollAMIPool}, nc); err != nil {
			return err
		}
		for _, a := range nc.Status.AMIs {
			if !fresh[a.ID] {
				return fmt.Errorf("status AMIs %v", nc.Status.AMIs)
			}
		}
		statusAt = time.Now()
		return nil
	})
	var doneAt time.Time
	waitFor(t, 10*time.Minute, "every node replaced by one on the new image", func() error {
		if err := rolled(t, rollAMIPool, originals, rollAMINodes+1, func(c *nsv1.NodeClaim) error {
			if !fresh[c.Status.ImageID] {
				return fmt.Errorf("nodeclaim %s runs %q", c.Name, c.Status.ImageID)
			}
			return nil
		}); err != nil {
			return err
		}
		doneAt = time.Now()
		return nil
	})
	w.stop()
	checkInstances(t, rollAMIPool, func(in fakeaws.Instance) error {
		if !fresh[in.ImageID] {
			return fmt.Errorf("instance %s runs image %s, not the new one", in.ID, in.ImageID)
		}
		return nil
	})
	// No churn: a node on the new image is never disrupted, and every
	// replacement runs the new image (one on the old would drift again).
	traces := w.traces()
	for name, tr := range traces {
		if fresh[tr.image] && !tr.marked.IsZero() {
			t.Errorf("nodeclaim %s runs the new image %s but was disrupted (%s)", name, tr.image, tr.reason)
		}
		for _, r := range tr.replacements {
			if rt, ok := traces[r]; !ok || !fresh[rt.image] {
				t.Errorf("nodeclaim %s was replaced by %s on image %q, not the new one", name, r, rt.image)
			}
		}
	}
	// Every instance of the pool is a node on the old image or its one
	// replacement, or the node launched for the extra pod.
	w.check(t, originals, rollAMIBudget, rollAMINodes, 2*(rollAMINodes+1), string(nsv1.DisruptionReasonDrifted))
	scaledOn := "the new image"
	for _, tr := range traces {
		if old[tr.image] && !tr.created.Before(published) {
			scaledOn = "the old image (replaced in turn)"
		}
	}
	t.Logf("AMI roll of %d nodes (budget %d, PDB maxUnavailable 1): the class resolved the new image %s after publication, every node replaced %s after publication (%s after the class changed); "+
		"at most %d nodeclaims disrupting at once (%d nodes tainted or deleting), at least %d pods running; the node for the extra pod ran %s; %d instances launched for %d nodes",
		rollAMINodes, rollAMIBudget, statusAt.Sub(published).Round(time.Second), doneAt.Sub(published).Round(time.Second), doneAt.Sub(statusAt).Round(time.Second),
		w.maxClaims, w.maxNodes, w.minRunning, scaledOn, len(w.instances), rollAMINodes+1)
	stopRollWorkload(t, rollAMIPool)
}

// expireRoll: two nodes of a pool with expireAfter 2m and a budget of zero
// nodes, each running one pod of a Deployment with a PDB; each node must be
// replaced once it expires (not before) although the budget allows
// nothing: expiry is forced. Both may go at once; the PDB still keeps one
// pod running while they drain.
func expireRoll(t *testing.T) {
	rollPool(t, rollExpirePool, []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, func(p *nsv1.NodePool) {
		p.Spec.Template.Spec.ExpireAfter = nsv1.MustParseNillableDuration(rollExpireAfter.String())
		p.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: fmt.Sprint(rollExpireBudget)}}
	})
	rollWorkload(t, rollExpirePool, rollExpireNodes)
	originals := waitRollNodes(t, rollExpirePool, rollExpireNodes)
	w := watchRoll(t, rollExpirePool)
	waitFor(t, rollExpireAfter+6*time.Minute, "every expired node replaced", func() error {
		return rolled(t, rollExpirePool, originals, rollExpireNodes, nil)
	})
	w.stop()
	checkInstances(t, rollExpirePool, nil)
	// No bound on instances: a replacement that expires in turn before the
	// last original is gone (a slow machine) is replaced as it should be.
	w.check(t, originals, rollExpireNodes, rollExpireNodes, 0, string(nsv1.DisruptionReasonExpired))
	var lines []string
	traces := w.traces()
	for _, c := range originals {
		expiry := c.CreationTimestamp.Add(rollExpireAfter)
		s, ok := traces[c.Name]
		if !ok {
			continue // check reported it
		}
		if s.marked.Before(expiry.Add(-time.Second)) { // the API server stamps whole seconds
			t.Errorf("nodeclaim %s was disrupted at %s, before it expired at %s", c.Name, s.marked.Format(time.RFC3339), expiry.Format(time.RFC3339))
		}
		ready := replacementReady(traces, s)
		lines = append(lines, fmt.Sprintf("%s: expired %s, disrupted +%s, replacement %s initialized +%s, old node gone +%s",
			c.Name, expiry.Format("15:04:05"), s.marked.Sub(expiry).Round(time.Second), strings.Join(s.replacements, ","),
			ready.Sub(expiry).Round(time.Second), s.gone.Sub(expiry).Round(time.Second)))
	}
	t.Logf("expireAfter %s, %d nodes, budget %d: at most %d nodeclaims disrupting at once (%d nodes), at least %d of %d pods running; %d instances launched\n%s",
		rollExpireAfter, rollExpireNodes, rollExpireBudget, w.maxClaims, w.maxNodes, w.minRunning, rollExpireNodes, len(w.instances), strings.Join(lines, "\n"))
	stopRollWorkload(t, rollExpirePool)
}

// publishRollImages registers one image per architecture under the roll
// tag, created at at, and returns their ids.
func publishRollImages(t *testing.T, at time.Time) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for _, arch := range []string{"x86_64", "arm64"} {
		id := lab.World.AddImage(fakeaws.Image{
			Name: fmt.Sprintf("lab-golden-%s-%d", arch, at.Unix()), Arch: arch, CreationDate: at.UTC(),
			Tags: map[string]string{rollImageTag: "golden"},
		})
		ids[id] = true
	}
	return ids
}

// rollPool creates a NodePool and an EC2NodeClass named name, copied from
// the lab's spot fleet: large instances only, empty nodes removed after 5 s
// and no underutilized consolidation (so only the roll disrupts), with the
// given AMI selector. Both are deleted when the test ends.
func rollPool(t *testing.T, name string, amis []awsv1.AMISelectorTerm, mutate func(*nsv1.NodePool)) {
	t.Helper()
	c, p := fleetCopy(t, name, name, name, "5s", "large")
	c.Spec.AMISelectorTerms = amis
	mutate(p)
	createAreaPool(t, 2*time.Minute, c, p)
}

// rollWorkload starts a Deployment of n one-per-node pods on the pool and
// a PDB that lets one of them be down.
func rollWorkload(t *testing.T, pool string, n int32) {
	t.Helper()
	d := deployment(pool, pool, n, rollPodCPU, "256Mi")
	d.Namespace = rollNS
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: rollNS, Name: pool},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pool}}},
	}
	for _, o := range []client.Object{d, pdb} {
		if err := kube().Create(ctx(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// stopRollWorkload deletes the pool's Deployment, PDB and NodePool (its
// claims go with it, at once rather than at the budget's pace as empty
// nodes) and waits until the pool has no claim and no instance left.
func stopRollWorkload(t *testing.T, pool string) {
	t.Helper()
	for _, o := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: rollNS, Name: pool}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: rollNS, Name: pool}},
		&nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}},
	} {
		if err := kube().Delete(ctx(), o); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 4*time.Minute, "nodepool "+pool+" drained", func() error {
		if n := len(claimsOf(t, pool)); n > 0 {
			return fmt.Errorf("%d nodeclaims left", n)
		}
		if n := len(poolInstances(pool, true)); n > 0 {
			return fmt.Errorf("%d instances still live", n)
		}
		return nil
	})
}

// scaleIn sets a Deployment's replicas.
func scaleIn(t *testing.T, namespace, name string, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := kube().Get(ctx(), types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = &replicas
	if err := kube().Update(ctx(), d); err != nil {
		t.Fatal(err)
	}
}

// rollPods are the pool's Deployment's pods that are not terminating.
func rollPods(t testing.TB, pool string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := kube().List(ctx(), &pods, client.InNamespace(rollNS), client.MatchingLabels{"app": pool}); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() {
			out = append(out, p)
		}
	}
	return out
}

func runningOn(pods []corev1.Pod) map[string]int {
	out := map[string]int{}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning {
			out[p.Spec.NodeName]++
		}
	}
	return out
}

// waitRollNodes waits for the pool's n pods to run on n initialized
// claims, one pod each, and returns the claims.
func waitRollNodes(t *testing.T, pool string, n int) []nsv1.NodeClaim {
	t.Helper()
	var claims []nsv1.NodeClaim
	waitFor(t, 4*time.Minute, fmt.Sprintf("%d pods running on %d nodes of %s", n, n, pool), func() error {
		claims = claimsOf(t, pool)
		on := runningOn(rollPods(t, pool))
		if len(claims) != n {
			return fmt.Errorf("%d nodeclaims, %d nodes with running pods", len(claims), len(on))
		}
		for _, c := range claims {
			if !lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionInitialized) || on[c.Status.NodeName] != 1 {
				return fmt.Errorf("nodeclaim %s: initialized %v, %d pods running", c.Name,
					lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionInitialized), on[c.Status.NodeName])
			}
		}
		return nil
	})
	return claims
}

// rolled says whether the pool has n initialized claims, none of them an
// original, each running one pod and passing ok.
func rolled(t *testing.T, pool string, originals []nsv1.NodeClaim, n int, ok func(*nsv1.NodeClaim) error) error {
	was := map[string]bool{}
	for _, c := range originals {
		was[c.Name] = true
	}
	claims := claimsOf(t, pool)
	on := runningOn(rollPods(t, pool))
	left := 0
	for _, c := range claims {
		if was[c.Name] {
			left++
		}
	}
	if left > 0 || len(claims) != n {
		return fmt.Errorf("%d of %d original nodeclaims left, %d nodeclaims", left, len(originals), len(claims))
	}
	for i := range claims {
		c := &claims[i]
		if !lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionInitialized) || on[c.Status.NodeName] != 1 {
			return fmt.Errorf("nodeclaim %s: initialized %v, %d pods running", c.Name,
				lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionInitialized), on[c.Status.NodeName])
		}
		if ok != nil {
			if err := ok(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// poolInstances are the simulated instances launched for pool (live ones
// only if live).
func poolInstances(pool string, live bool) []fakeaws.Instance {
	var out []fakeaws.Instance
	for _, in := range lab.World.Instances() {
		if in.Tags[awsv1.TagNodePool] != pool {
			continue
		}
		if live && in.State != "pending" && in.State != "running" {
			continue
		}
		out = append(out, in)
	}
	return out
}

// checkInstances waits until the pool's live instances are exactly its
// claims' instances (none leaked, none shared), and checks each with ok.
func checkInstances(t *testing.T, pool string, ok func(fakeaws.Instance) error) {
	t.Helper()
	waitFor(t, time.Minute, "one live instance per nodeclaim of "+pool, func() error {
		byID := map[string]string{}
		for _, c := range claimsOf(t, pool) {
			id := c.Status.ProviderID[strings.LastIndex(c.Status.ProviderID, "/")+1:]
			if other, dup := byID[id]; dup {
				return fmt.Errorf("nodeclaims %s and %s share instance %s", other, c.Name, id)
			}
			byID[id] = c.Name
		}
		live := poolInstances(pool, true)
		for _, in := range live {
			claim, found := byID[in.ID]
			if !found {
				return fmt.Errorf("instance %s (%s) is live but no nodeclaim has it", in.ID, in.Tags[awsv1.TagNodeClaim])
			}
			if in.Tags[awsv1.TagNodeClaim] != claim {
				return fmt.Errorf("instance %s is tagged for nodeclaim %q but nodeclaim %s has it", in.ID, in.Tags[awsv1.TagNodeClaim], claim)
			}
		}
		if len(live) != len(byID) {
			return fmt.Errorf("%d live instances for %d nodeclaims", len(live), len(byID))
		}
		return nil
	})
	if ok == nil {
		return
	}
	for _, in := range poolInstances(pool, true) {
		if err := ok(in); err != nil {
			t.Error(err)
		}
	}
}

// rollWatch samples a pool while it rolls: how many of its claims are
// disrupting (deleted, or marked by a disruption command: what the budget
// counts), how many of its nodes carry the disrupted taint or are being
// deleted, how few of its pods run, what each claim went through, and every
// instance launched for it.
type rollWatch struct {
	t    *testing.T
	pool string
	quit chan struct{}
	done chan struct{}

	mu         sync.Mutex
	maxClaims  int
	maxNodes   int
	maxAt      time.Time
	maxNames   []string
	minRunning int
	claims     map[string]*claimTrace
	instances  map[string]fakeaws.Instance
	errs       []error
}

// claimTrace is what the watch saw of one claim.
type claimTrace struct {
	created      time.Time
	image        string
	marked       time.Time // first seen disrupting
	gone         time.Time
	reason       string
	replacements []string
	initialized  time.Time // from its condition
}

func watchRoll(t *testing.T, pool string) *rollWatch {
	w := &rollWatch{t: t, pool: pool, quit: make(chan struct{}), done: make(chan struct{}), minRunning: 1 << 30,
		claims: map[string]*claimTrace{}, instances: map[string]fakeaws.Instance{}}
	go w.run()
	return w
}

func (w *rollWatch) run() {
	defer close(w.done)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		w.sampleNow()
		select {
		case <-w.quit:
			// One last sample after the caller saw the roll finish: the
			// last tick may predate the last claim going.
			w.sampleNow()
			return
		case <-tick.C:
		}
	}
}

// sampleNow samples and keeps the error, if any.
func (w *rollWatch) sampleNow() {
	if err := w.sample(time.Now()); err != nil {
		w.mu.Lock()
		w.errs = append(w.errs, err)
		w.mu.Unlock()
	}
}

func (w *rollWatch) sample(now time.Time) error {
	var claims nsv1.NodeClaimList
	if err := kube().List(ctx(), &claims, client.MatchingLabels{nsv1.LabelNodePool: w.pool}); err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := kube().List(ctx(), &nodes, client.MatchingLabels{nsv1.LabelNodePool: w.pool}); err != nil {
		return err
	}
	var pods corev1.PodList
	if err := kube().List(ctx(), &pods, client.InNamespace(rollNS), client.MatchingLabels{"app": w.pool}); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	present := map[string]bool{}
	var disrupting []string
	for _, c := range claims.Items {
		present[c.Name] = true
		tr := w.claims[c.Name]
		if tr == nil {
			tr = &claimTrace{created: c.CreationTimestamp.Time}
			w.claims[c.Name] = tr
		}
		if c.Status.ImageID != "" {
			tr.image = c.Status.ImageID
		}
		if cond := meta.FindStatusCondition(c.Status.Conditions, nsv1.ConditionInitialized); cond != nil && cond.Status == metav1.ConditionTrue {
			tr.initialized = cond.LastTransitionTime.Time
		}
		if !c.DeletionTimestamp.IsZero() || c.Annotations[nsv1.AnnotationDisruptionCommand] != "" {
			disrupting = append(disrupting, c.Name)
			if tr.marked.IsZero() {
				tr.marked = now
			}
		}
		if r := c.Annotations[nsv1.AnnotationDisruptionReason]; r != "" {
			tr.reason = r
		}
		if r := c.Annotations[nsv1.AnnotationDisruptionReplacements]; r != "" {
			tr.replacements = strings.Split(r, ",")
		}
	}
	for name, tr := range w.claims {
		if !present[name] && tr.gone.IsZero() {
			tr.gone = now
		}
	}
	if len(disrupting) > w.maxClaims {
		w.maxClaims, w.maxAt, w.maxNames = len(disrupting), now, disrupting
	}
	tainted := 0
	for _, n := range nodes.Items {
		if hasDisruptedTaint(n) || !n.DeletionTimestamp.IsZero() {
			tainted++
		}
	}
	w.maxNodes = max(w.maxNodes, tainted)
	running := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	w.minRunning = min(w.minRunning, running)
	for _, in := range poolInstances(w.pool, false) {
		w.instances[in.ID] = in
	}
	return nil
}

func hasDisruptedTaint(n corev1.Node) bool {
	for _, taint := range n.Spec.Taints {
		if taint.MatchTaint(&nsv1.DisruptedTaint) {
			return true
		}
	}
	return false
}

func (w *rollWatch) stop() {
	close(w.quit)
	<-w.done
}

// check holds what the watch saw to the budget and the PDB: at most budget
// claims (and nodes) disrupting at once, at least n-1 pods running, every
// original claim disrupted for reason and gone, and (when maxInstances > 0)
// no more instances launched than that.
func (w *rollWatch) check(t *testing.T, originals []nsv1.NodeClaim, budget, n, maxInstances int, reason string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, err := range w.errs {
		t.Errorf("sampling nodepool %s: %v", w.pool, err)
	}
	if w.maxClaims > budget {
		t.Errorf("%d nodeclaims of %s disrupting at once at %s (%v); the budget allows %d",
			w.maxClaims, w.pool, w.maxAt.Format(time.RFC3339), w.maxNames, budget)
	}
	if w.maxNodes > budget {
		t.Errorf("%d nodes of %s tainted disrupted or deleting at once; the budget allows %d", w.maxNodes, w.pool, budget)
	}
	if w.minRunning < n-1 {
		t.Errorf("only %d of %d pods running at one point; the PDB allows one down", w.minRunning, n)
	}
	for _, c := range originals {
		tr := w.claims[c.Name]
		switch {
		case tr == nil || tr.marked.IsZero():
			t.Errorf("original nodeclaim %s was never seen disrupting", c.Name)
		case tr.reason != reason:
			t.Errorf("original nodeclaim %s was disrupted for %q, want %s", c.Name, tr.reason, reason)
		case len(tr.replacements) == 0:
			t.Errorf("original nodeclaim %s was disrupted without a replacement", c.Name)
		case tr.gone.IsZero():
			t.Errorf("original nodeclaim %s was not seen going", c.Name)
		}
	}
	if maxInstances > 0 && len(w.instances) > maxInstances {
		t.Errorf("%d instances launched for nodepool %s, want at most %d", len(w.instances), w.pool, maxInstances)
	}
}

// traces are copies of what the watch saw of each claim.
func (w *rollWatch) traces() map[string]claimTrace {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]claimTrace, len(w.claims))
	for name, tr := range w.claims {
		out[name] = *tr
	}
	return out
}

// replacementReady is when the last of a trace's replacements initialized.
func replacementReady(traces map[string]claimTrace, tr claimTrace) time.Time {
	var last time.Time
	for _, r := range tr.replacements {
		if rt, ok := traces[r]; ok && rt.initialized.After(last) {
			last = rt.initialized
		}
	}
	return last
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
