package interruption_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
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
	"github.com/nodesmith/nodesmith/pkg/controllers/interruption"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// TestNoticeToReplacementToDrain runs the product's own wiring
// (controllers.New with an interruption queue) on a spot warning: the queue
// marks the claim, the provisioner — woken at once — plans the node's pods
// onto a new claim while the node still runs them, and the node is drained
// as soon as that claim is ready, not at the deadline.
func TestNoticeToReplacementToDrain(t *testing.T) {
	ctx := context.Background()
	h := interruption.SharedHarness()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	world := fakeaws.NewWorld(fakeaws.Options{Clock: clk, ClusterName: "lab", InterruptionQueue: "notices", Seed: 4242})
	srv := fakeaws.NewServer(world)
	url := srv.Start()
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", "")}
	sqsClient := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(url) })
	ec2Client := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(url) })
	instance := launch(t, ec2Client, world, clk)

	id := fmt.Sprintf("e2e-%d", time.Now().UnixNano()%100000)
	cloud := fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, instance.Zone))
	qo := interruption.DefaultOptions("notices")
	qo.WaitTime = 0
	set, err := controllers.New(controllers.Config{
		Kube: h.Client, Cloud: cloud, Clock: clk, Events: events.NewFakeRecorder(10000), Metrics: controllertest.Metrics(),
		Options: controllers.Options{FeatureGates: controllers.DefaultFeatureGates(), LaunchWorkers: 1},
		Interruption: &controllers.Interruption{SQS: sqsClient, Options: qo, Fresh: h.Direct,
			Unavailable: catalog.NewUnavailableOfferings(clk, 0), History: catalog.NewInterruptionHistory(clk, 0)},
	})
	if err != nil {
		t.Fatal(err)
	}
	var queue *interruption.Queue
	for _, s := range set.Singletons {
		if q, ok := s.(*interruption.Queue); ok {
			queue = q
		}
	}
	var disrupted reconcile.Reconciler
	for _, c := range set.Controllers {
		if c.Name == "interruption.disrupted" {
			disrupted = c.Reconciler
		}
	}
	if queue == nil || disrupted == nil {
		t.Fatal("controllers.New did not build the interruption handler")
	}

	// A pool whose nodes carry fixture=<id>, a node of it on the instance,
	// and two pods there that only this pool can place.
	pool := controllertest.NodePool("pool-" + id)
	pool.Spec.Template.ObjectMeta.Labels = map[string]string{"fixture": id}
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
	claim.Status = nsv1.NodeClaimStatus{ProviderID: pid, NodeName: node.Name, InstanceType: instance.Type, Zone: instance.Zone,
		CapacityType: "spot", Allocatable: node.Status.Allocatable, Capacity: node.Status.Capacity}
	initialized(claim, clk.Now())
	if err := h.Direct.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, claim)
	var pods []*corev1.Pod
	for i := range 2 {
		p := controllertest.Pod(id, fmt.Sprintf("web-%d", i), "500m")
		p.Spec.NodeName = node.Name
		p.Spec.NodeSelector = map[string]string{"fixture": id}
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs", Controller: ptr.To(true)}}
		mustCreate(t, h.Direct, p)
		h.Cached(t, p)
		pods = append(pods, p)
	}

	// The notice.
	if err := world.Interrupt(instance.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	marked := get(t, h.Direct, claim)
	if c := meta.FindStatusCondition(marked.Status.Conditions, nsv1.ConditionDisrupting); c == nil || c.Reason != nsv1.DisruptingReasonSpotInterruption {
		t.Fatalf("claim not marked: %+v", c)
	}
	h.Cached(t, marked)

	// The provisioner was woken with its window closed: one step plans the
	// pods onto a replacement.
	if _, err := set.Provisioner.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	var replacement string
	for _, p := range pods {
		target, ok := set.Cluster.Nominated(p.UID)
		if !ok || target == claim.Name || target == node.Name {
			t.Fatalf("pod %s not planned elsewhere (nominated %q %v)", p.Name, target, ok)
		}
		replacement = target
	}
	repl := &nsv1.NodeClaim{}
	if err := h.Direct.Get(ctx, types.NamespacedName{Name: replacement}, repl); err != nil {
		t.Fatalf("the replacement %s: %v", replacement, err)
	}
	if repl.Labels[nsv1.LabelNodePool] != pool.Name {
		t.Fatalf("replacement %s is in pool %s", repl.Name, repl.Labels[nsv1.LabelNodePool])
	}
	h.Cached(t, repl)

	// Booting: the node keeps its pods.
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: claim.Name}}
	if _, err := disrupted.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if !get(t, h.Direct, claim).DeletionTimestamp.IsZero() {
		t.Fatal("drained while the replacement boots")
	}
	// Ready 30 s after the notice: drained then, 60 s before it had to be.
	clk.Step(30 * time.Second)
	repl = get(t, h.Direct, repl)
	initialized(repl, clk.Now())
	if err := h.Direct.Status().Update(ctx, repl); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, repl)
	if _, err := disrupted.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if get(t, h.Direct, claim).DeletionTimestamp.IsZero() {
		t.Fatal("not drained once the replacement was ready")
	}
}

func launch(t *testing.T, c *ec2.Client, world *fakeaws.World, clk *clocktesting.FakeClock) fakeaws.Instance {
	t.Helper()
	ctx := context.Background()
	imgs, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
		Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{"amazon-eks-node-al2023-x86_64-standard-*"}}}})
	if err != nil || len(imgs.Images) != 1 {
		t.Fatalf("DescribeImages: %v", err)
	}
	lt, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("e2e"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: imgs.Images[0].ImageId}})
	if err != nil {
		t.Fatal(err)
	}
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil || len(subnets.Subnets) == 0 {
		t.Fatalf("DescribeSubnets: %v", err)
	}
	out, err := c.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: lt.LaunchTemplate.LaunchTemplateId, Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", SubnetId: subnets.Subnets[0].SubnetId}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: "spot"},
		SpotOptions:                 &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
	})
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("CreateFleet: %v", err)
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
