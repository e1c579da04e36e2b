package interruption_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/disruptor"
	"github.com/nodesmith/nodesmith/pkg/controllers/interruption"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	interruptionpolicy "github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
)

// lab is the product's own wiring (controllers.New with an interruption
// queue) around one spot instance: a pool whose nodes carry fixture=<id>,
// an initialized claim and Ready node on the instance, and pods there that
// only this pool can place.
type lab struct {
	t         *testing.T
	ctx       context.Context
	h         *controllertest.Harness
	clk       *clocktesting.FakeClock
	world     *fakeaws.World
	instance  fakeaws.Instance
	queue     *interruption.Queue
	executor  operator.Singleton
	disrupted reconcile.Reconciler
	metrics   *metrics.Metrics
	claim     *nsv1.NodeClaim
	node      *corev1.Node
	pods      []*corev1.Pod
	// reservation is the interruptible capacity reservation the instance
	// runs in (newLabIn), "" for a spot instance.
	reservation string
}

func newLab(t *testing.T, mode interruptionpolicy.RebalanceMode, seed int64, budget string) *lab {
	return newLabIn(t, mode, seed, budget, false)
}

// newLabIn is newLab; with interruptible set the instance is an on-demand
// one in an interruptible capacity reservation of one instance
// (lab.reservation), its claim reserved, instead of a spot instance.
func newLabIn(t *testing.T, mode interruptionpolicy.RebalanceMode, seed int64, budget string, interruptible bool) *lab {
	ctx := context.Background()
	h := interruption.SharedHarness()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	world := fakeaws.NewWorld(fakeaws.Options{Clock: clk, ClusterName: "lab", InterruptionQueue: "notices", Seed: seed})
	srv := fakeaws.NewServer(world)
	url := srv.Start()
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", "")}
	sqsClient := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(url) })
	ec2Client := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(url) })
	reservation := ""
	if interruptible {
		var err error
		reservation, err = world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: world.Options().Zones[0],
			Total: 1, MatchCriteria: fakeaws.MatchTargeted, Interruptible: true})
		if err != nil {
			t.Fatal(err)
		}
	}
	instance := launch(t, ec2Client, world, clk, reservation)

	id := fmt.Sprintf("e2e-%d-%d", time.Now().UnixNano()%100000, seed)
	cloud := fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, instance.Zone))
	qo := interruption.DefaultOptions("notices")
	qo.WaitTime = 0
	qo.Rebalance = mode
	m := controllertest.Metrics()
	set, err := controllers.New(controllers.Config{
		Kube: h.Client, Cloud: cloud, Clock: clk, Events: events.NewFakeRecorder(10000), Metrics: m,
		Options: controllers.Options{FeatureGates: controllers.DefaultFeatureGates(), LaunchWorkers: 1},
		Interruption: &controllers.Interruption{SQS: sqsClient, Options: qo, Fresh: h.Direct,
			Unavailable: catalog.NewUnavailableOfferings(clk, 0), History: catalog.NewInterruptionHistory(clk, 0)},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, ctx: ctx, h: h, clk: clk, world: world, instance: instance, metrics: m, reservation: reservation}
	for _, s := range set.Singletons {
		switch s := s.(type) {
		case *interruption.Queue:
			l.queue = s
		case *disruptor.Controller:
			l.executor = s
		}
	}
	for _, c := range set.Controllers {
		if c.Name == "interruption.disrupted" {
			l.disrupted = c.Reconciler
		}
	}
	if l.queue == nil || l.disrupted == nil || l.executor == nil {
		t.Fatal("controllers.New did not build the interruption handler and the disruption executor")
	}

	pool := controllertest.NodePool("pool-" + id)
	pool.Spec.Template.ObjectMeta.Labels = map[string]string{"fixture": id}
	if budget != "" {
		pool.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: budget}}
	}
	mustCreate(t, h.Direct, pool)
	h.Cached(t, pool)
	mustCreate(t, h.Direct, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: id}})
	pid := "aws:///" + instance.Zone + "/" + instance.ID
	node := controllertest.Node("node-"+id, pid, "2")
	node.Labels["fixture"] = id
	node.Labels[nsv1.LabelNodePool] = pool.Name
	mustCreate(t, h.Direct, node)
	h.SetNodeReady(t, node, corev1.ConditionTrue)
	claim := controllertest.NodeClaim("claim-"+id, pool.Name)
	claim.Finalizers = []string{nsv1.TerminationFinalizer} // the drain is seen as a deletion timestamp
	mustCreate(t, h.Direct, claim)
	capacityType := nsv1.CapacityTypeSpot
	if interruptible {
		capacityType = nsv1.CapacityTypeReserved
	}
	claim.Status = nsv1.NodeClaimStatus{ProviderID: pid, NodeName: node.Name, InstanceType: instance.Type, Zone: instance.Zone,
		CapacityType: capacityType, Allocatable: node.Status.Allocatable, Capacity: node.Status.Capacity}
	initialized(claim, clk.Now())
	if err := h.Direct.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, claim)
	for i := range 2 {
		p := controllertest.Pod(id, fmt.Sprintf("web-%d", i), "500m")
		p.Spec.NodeName = node.Name
		p.Spec.NodeSelector = map[string]string{"fixture": id}
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs", Controller: ptr.To(true)}}
		mustCreate(t, h.Direct, p)
		h.Cached(t, p)
		l.pods = append(l.pods, p)
	}
	l.claim, l.node = claim, node
	return l
}

// notice runs the queue step for what the world sent, and waits for the
// cache to show the claim marked with reason.
func (l *lab) notice(reason string) {
	l.t.Helper()
	if _, err := l.queue.Reconcile(l.ctx); err != nil {
		l.t.Fatal(err)
	}
	marked := get(l.t, l.h.Direct, l.claim)
	if c := meta.FindStatusCondition(marked.Status.Conditions, nsv1.ConditionDisrupting); c == nil || c.Reason != reason {
		l.t.Fatalf("claim not marked %s: %+v", reason, c)
	}
	l.h.Cached(l.t, marked)
}

// step runs the executor once and the Disrupted observer on the claim.
func (l *lab) step() {
	l.t.Helper()
	if _, err := l.executor.Reconcile(l.ctx); err != nil {
		l.t.Fatal(err)
	}
	if _, err := l.disrupted.Reconcile(l.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: l.claim.Name}}); err != nil {
		l.t.Fatal(err)
	}
}

// replacement is the claim the executor's command launched for the node's
// pods (its candidate's annotations name it), once the cache shows it.
func (l *lab) replacement() *nsv1.NodeClaim {
	l.t.Helper()
	c := get(l.t, l.h.Direct, l.claim)
	names := c.Annotations[nsv1.AnnotationDisruptionReplacements]
	if names == "" || strings.Contains(names, ",") {
		l.t.Fatalf("the claim is in no command with one replacement: %v", c.Annotations)
	}
	repl := &nsv1.NodeClaim{}
	if err := l.h.Direct.Get(l.ctx, types.NamespacedName{Name: names}, repl); err != nil {
		l.t.Fatalf("the replacement %s: %v", names, err)
	}
	if repl.Annotations[nsv1.AnnotationReplacementFor] != c.Annotations[nsv1.AnnotationDisruptionCommand] {
		l.t.Fatalf("replacement %s is not protected as the command's: %v", repl.Name, repl.Annotations)
	}
	l.h.Cached(l.t, repl)
	l.h.Cached(l.t, c)
	return repl
}

func (l *lab) ready(repl *nsv1.NodeClaim) {
	l.t.Helper()
	repl = get(l.t, l.h.Direct, repl)
	initialized(repl, l.clk.Now())
	if err := l.h.Direct.Status().Update(l.ctx, repl); err != nil {
		l.t.Fatal(err)
	}
	l.h.Cached(l.t, repl)
}

func (l *lab) deleting() bool {
	l.t.Helper()
	return !get(l.t, l.h.Direct, l.claim).DeletionTimestamp.IsZero()
}

// TestNoticeToReplacementToDrain: the queue marks the claim and wakes the
// executor, whose plan launches a replacement for the node's pods while
// the node still runs them; the node is drained as soon as that claim is
// ready, not at the deadline, with its termination timestamp at the
// instance's end.
func TestNoticeToReplacementToDrain(t *testing.T) {
	l := newLab(t, interruptionpolicy.RebalancePrespin, 4242, "")
	if err := l.world.Interrupt(l.instance.ID); err != nil {
		t.Fatal(err)
	}
	l.notice(nsv1.DisruptingReasonSpotInterruption)
	l.step()
	repl := l.replacement()
	if repl.Labels[nsv1.LabelNodePool] != l.claim.Labels[nsv1.LabelNodePool] {
		t.Fatalf("replacement %s is in pool %s", repl.Name, repl.Labels[nsv1.LabelNodePool])
	}
	if testutil.CollectAndCount(l.metrics.Interruption.ReplacementLatency) != 1 {
		t.Error("no replacement latency observed once the command started")
	}
	// Booting: the node keeps its pods.
	l.clk.Step(10 * time.Second)
	l.step()
	if l.deleting() {
		t.Fatal("drained while the replacement boots")
	}
	// Ready 30 s after the notice: drained then, 60 s before it had to be.
	l.clk.Step(20 * time.Second)
	l.ready(repl)
	l.step()
	claim := get(t, l.h.Direct, l.claim)
	if claim.DeletionTimestamp.IsZero() {
		t.Fatal("not drained once the replacement was ready")
	}
	if got, want := claim.Annotations[nsv1.AnnotationTerminationTimestamp], claim.Annotations[nsv1.AnnotationDisruptionDeadline]; got != want || got == "" {
		t.Errorf("termination timestamp %q, want the deadline %q", got, want)
	}
	// The executor plans the whole API server, which other tests of the
	// package leave marked claims in: at least this one's command counts.
	if got := testutil.ToFloat64(l.metrics.Disruption.Decisions.WithLabelValues("Interruption", "Interrupted", "replace")); got < 1 {
		t.Errorf("nodesmith_disruption_decisions{method=Interruption} = %v, want this command counted", got)
	}
}

// TestDeadlineForcesTheDrain: the replacement never initializes; the node
// is drained when the deadline minus the longest grace period (30 s)
// arrives, not before.
func TestDeadlineForcesTheDrain(t *testing.T) {
	l := newLab(t, interruptionpolicy.RebalancePrespin, 4343, "")
	if err := l.world.Interrupt(l.instance.ID); err != nil {
		t.Fatal(err)
	}
	l.notice(nsv1.DisruptingReasonSpotInterruption)
	l.step()
	l.replacement()
	l.clk.Step(89 * time.Second)
	l.step()
	if l.deleting() {
		t.Fatal("drained before the deadline minus the grace period")
	}
	l.clk.Step(time.Second)
	l.step()
	if !l.deleting() {
		t.Fatal("not drained at deadline minus grace")
	}
}

// TestReservationWarningReplacesThenDrains: an interruptible capacity
// reservation's owner reclaims the node's instance; EC2's warning marks the
// claim, and the one disruption executor launches the replacement and
// drains the node at the warning's termination time minus the longest
// grace period (30 s), as for a spot warning.
func TestReservationWarningReplacesThenDrains(t *testing.T) {
	l := newLabIn(t, interruptionpolicy.RebalancePrespin, 4545, "", true)
	if got, _ := l.world.Instance(l.instance.ID); got.CapacityReservationID != l.reservation {
		t.Fatalf("the lab's instance is in %q, want the reservation %s", got.CapacityReservationID, l.reservation)
	}
	warned := l.clk.Now()
	if ids, err := l.world.ReclaimInterruptible(l.reservation, 1); err != nil || len(ids) != 1 || ids[0] != l.instance.ID {
		t.Fatalf("ReclaimInterruptible = %v, %v", ids, err)
	}
	l.notice(nsv1.DisruptingReasonCapacityReservationInterruption)
	if got, want := get(t, l.h.Direct, l.claim).Annotations[nsv1.AnnotationDisruptionDeadline], warned.Add(2*time.Minute).UTC().Format(time.RFC3339); got != want {
		t.Fatalf("deadline %q, want the warning's termination time %q", got, want)
	}
	l.step()
	repl := l.replacement()
	if repl.Labels[nsv1.LabelNodePool] != l.claim.Labels[nsv1.LabelNodePool] {
		t.Fatalf("replacement %s is in pool %s", repl.Name, repl.Labels[nsv1.LabelNodePool])
	}
	l.clk.Step(89 * time.Second)
	l.step()
	if l.deleting() {
		t.Fatal("drained before the termination time minus the grace period")
	}
	l.clk.Step(time.Second)
	l.step()
	if !l.deleting() {
		t.Fatal("not drained at the termination time minus grace")
	}
	if got := testutil.ToFloat64(l.metrics.Interruption.Actions.WithLabelValues("capacity_reservation_interruption", "mark")); got != 1 {
		t.Errorf("nodesmith interruption actions{capacity_reservation_interruption, mark} = %v, want 1", got)
	}
}

// TestPrespinHoldsUntilTheWarning: a rebalance recommendation in prespin
// mode launches one replacement and keeps the node however long no notice
// comes, without using up the pool's budget (0 here); the interruption
// warning that follows drains it at once, the replacement being ready.
func TestPrespinHoldsUntilTheWarning(t *testing.T) {
	l := newLab(t, interruptionpolicy.RebalancePrespin, 4444, "0")
	if err := l.world.Rebalance(l.instance.ID); err != nil {
		t.Fatal(err)
	}
	l.notice(nsv1.DisruptingReasonRebalanceRecommendation)
	l.step()
	repl := l.replacement()
	if get(t, l.h.Direct, l.claim).Annotations[nsv1.AnnotationDisruptionHold] != "true" {
		t.Fatal("the prespin command does not hold its candidate")
	}
	l.clk.Step(time.Minute)
	l.ready(repl)
	for range 3 {
		l.clk.Step(10 * time.Minute)
		l.step()
	}
	if l.deleting() {
		t.Fatal("prespin drained on the recommendation")
	}
	var claims nsv1.NodeClaimList
	if err := l.h.Direct.List(l.ctx, &claims, client.MatchingLabels{nsv1.LabelNodePool: l.claim.Labels[nsv1.LabelNodePool]}); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 2 {
		t.Fatalf("the pool has %d claims after 30 minutes of prespin, want the node and its one replacement", len(claims.Items))
	}
	if err := l.world.Interrupt(l.instance.ID); err != nil {
		t.Fatal(err)
	}
	l.notice(nsv1.DisruptingReasonSpotInterruption)
	l.step()
	if !l.deleting() {
		t.Fatal("not drained when the warning found the replacement ready")
	}
}

// TestRebalanceDrain: in drain mode the recommendation is a voluntary
// replacement: with the budget at 0 nothing starts; with room, the node is
// drained once its replacement is ready.
func TestRebalanceDrain(t *testing.T) {
	for _, tt := range []struct {
		budget    string
		wantStart bool
	}{{"0", false}, {"1", true}} {
		t.Run("budget"+tt.budget, func(t *testing.T) {
			l := newLab(t, interruptionpolicy.RebalanceDrain, 4545+int64(len(tt.budget)), tt.budget)
			if err := l.world.Rebalance(l.instance.ID); err != nil {
				t.Fatal(err)
			}
			l.notice(nsv1.DisruptingReasonRebalanceRecommendation)
			l.step()
			c := get(t, l.h.Direct, l.claim)
			if started := c.Annotations[nsv1.AnnotationDisruptionCommand] != ""; started != tt.wantStart {
				t.Fatalf("command started = %v, want %v (%v)", started, tt.wantStart, c.Annotations)
			}
			if !tt.wantStart {
				return
			}
			repl := l.replacement()
			l.step()
			if l.deleting() {
				t.Fatal("drained before the replacement was ready")
			}
			l.clk.Step(time.Minute)
			l.ready(repl)
			l.step()
			if !l.deleting() {
				t.Fatal("not drained once the replacement was ready")
			}
		})
	}
}

// launch starts an m5.large: spot, or, with reservation set, on-demand in
// that capacity reservation (in the world's first zone).
func launch(t *testing.T, c *ec2.Client, world *fakeaws.World, clk *clocktesting.FakeClock, reservation string) fakeaws.Instance {
	t.Helper()
	ctx := context.Background()
	imgs, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
		Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{"amazon-eks-node-al2023-x86_64-standard-1.37-*"}}}})
	if err != nil || len(imgs.Images) != 1 {
		t.Fatalf("DescribeImages: %v", err)
	}
	data := &ec2types.RequestLaunchTemplateData{ImageId: imgs.Images[0].ImageId}
	capacityType := ec2types.DefaultTargetCapacityTypeSpot
	if reservation != "" {
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(reservation)}}
		capacityType = ec2types.DefaultTargetCapacityTypeOnDemand
	}
	lt, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("e2e"), LaunchTemplateData: data})
	if err != nil {
		t.Fatal(err)
	}
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
		{Name: aws.String("availability-zone"), Values: []string{world.Options().Zones[0]}}}})
	if err != nil || len(subnets.Subnets) == 0 {
		t.Fatalf("DescribeSubnets: %v", err)
	}
	out, err := c.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: lt.LaunchTemplate.LaunchTemplateId, Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", SubnetId: subnets.Subnets[0].SubnetId}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: capacityType},
		SpotOptions:                 &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
	})
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("CreateFleet: %v %+v", err, out)
	}
	clk.Step(time.Minute)
	world.Tick()
	in, _ := world.Instance(out.Instances[0].InstanceIds[0])
	return in
}

func initialized(c *nsv1.NodeClaim, at time.Time) {
	for _, t := range []string{nsv1.ConditionLaunched, nsv1.ConditionRegistered, nsv1.ConditionInitialized} {
		lifecycle.SetCondition(&c.Status.Conditions, lifecycle.Condition(t, true, "", ""), 1, metav1.NewTime(at))
	}
}

func mustCreate(t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), o); err != nil {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

func get[T client.Object](t *testing.T, c client.Client, o T) T {
	t.Helper()
	out := o.DeepCopyObject().(T)
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), out); err != nil {
		t.Fatal(err)
	}
	return out
}
