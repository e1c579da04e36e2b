package interruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	nsevents "github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/interruption/messages"
	"github.com/nodesmith/nodesmith/pkg/simulator/apiserver"
)

// BenchmarkQueueStep measures parse + dispatch: queue steps that each take
// 10 spot interruption warnings for distinct instances from the simulated
// SQS (real SDK client over loopback HTTP), mark each NodeClaim (annotations,
// condition, node taint) in the simulator's in-memory API server, and delete
// the batch. It reports messages handled per second.
func BenchmarkQueueStep(b *testing.B) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	world := fakeaws.NewWorld(fakeaws.Options{Clock: clk, InterruptionQueue: queueName, Seed: 1})
	srv := fakeaws.NewServer(world)
	url := srv.Start()
	b.Cleanup(srv.Close)
	sqsClient, _ := clients(url)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	if err := nsv1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	// The simulator's in-memory API server, with the controller's indexes:
	// controller-runtime's fake client would be most of what is measured.
	store := apiserver.New(scheme, clk, 1)
	if err := state.IndexFields(ctx, store); err != nil {
		b.Fatal(err)
	}
	kube := store.Client()
	// Events go through the de-duplicating recorder to a sink that keeps none.
	rec := nsevents.NewRecorder(&events.FakeRecorder{}, clk, time.Minute)
	m := controllertest.Metrics()
	opts := DefaultOptions(queueName)
	opts.WaitTime = 0
	q, err := NewQueue(Deps{Kube: kube, Clock: clk, Recorder: rec, Metrics: m, Unavailable: catalog.NewUnavailableOfferings(clk, 0),
		History: catalog.NewInterruptionHistory(clk, 0)}, sqsClient, opts)
	if err != nil {
		b.Fatal(err)
	}
	seq := 0
	batch := func() {
		for range DefaultMaxMessages {
			seq++
			id := fmt.Sprintf("i-%017x", seq)
			pid := "aws:///us-east-1a/" + id
			node := controllertest.Node(fmt.Sprintf("node-%d", seq), pid, "2")
			claim := controllertest.NodeClaim(fmt.Sprintf("claim-%d", seq), "pool")
			if err := kube.Create(ctx, node); err != nil {
				b.Fatal(err)
			}
			if err := kube.Create(ctx, claim); err != nil {
				b.Fatal(err)
			}
			claim.Status = nsv1.NodeClaimStatus{ProviderID: pid, NodeName: node.Name, InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot"}
			if err := kube.Status().Update(ctx, claim); err != nil {
				b.Fatal(err)
			}
			if _, err := world.SendMessage(queueName, fmt.Sprintf(`{"version":"0","id":"e-%d","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"%s","region":"us-east-1","resources":[],"detail":{"instance-id":"%s","instance-action":"terminate"}}`,
				seq, clk.Now().UTC().Format(time.RFC3339), id)); err != nil {
				b.Fatal(err)
			}
		}
	}
	for b.Loop() {
		b.StopTimer()
		batch()
		b.StartTimer()
		if _, err := q.Reconcile(ctx); err != nil {
			b.Fatal(err)
		}
	}
	deleted := testutil.ToFloat64(m.Interruption.MessagesDeleted.WithLabelValues(string(messages.KindSpotInterruption)))
	if int(deleted) != seq {
		vis, inflight := world.QueueDepth(queueName)
		b.Fatalf("deleted %v of %d messages (errors %v, ignored %v, queue %d visible %d in flight)", deleted, seq,
			testutil.ToFloat64(m.Interruption.MessageErrors.WithLabelValues(string(messages.KindSpotInterruption))),
			testutil.ToFloat64(m.Interruption.MessagesIgnored.WithLabelValues("not_managed")), vis, inflight)
	}
	b.ReportMetric(deleted/b.Elapsed().Seconds(), "msgs/s")
}
