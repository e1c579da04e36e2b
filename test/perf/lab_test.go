package perf

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodesmith/nodesmith/pkg/labkit"
)

const (
	cluster  = "perf"
	region   = "us-east-1"
	nodeRole = "NodesmithNodeRole-my-cluster" // spec.role of examples/spot-fleet.yaml
	ns       = "perf"
	// bootDelay is how long a simulated instance takes from CreateFleet to
	// running (its Node is registered then). Karpenter's suite runs on
	// KWOK nodes that exist as soon as they are created; EC2 takes tens of
	// seconds. The table states it next to every figure.
	bootDelay = 2 * time.Second
)

// lab is the running environment every scenario shares; each scenario
// creates its own NodePool and workloads and removes them when it ends.
var lab *perfLab

// perfLab is the shared test bed (pkg/labkit) with the scenario's current
// controller process.
type perfLab struct {
	*labkit.Lab
	controller *controllerProc
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctrllog.SetLogger(logr.Discard())
	start := time.Now()
	l, err := startLab(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: perf lab: %v\n", err)
		return 1
	}
	lab = l
	fmt.Fprintf(os.Stderr, "perf lab up in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	printTable(os.Stdout)
	cancel()
	if err := l.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: stopping the perf lab: %v\n", err)
		return 1
	}
	return code
}

// startLab brings up the test bed without IAM enforcement. Karpenter's
// KWOK provider has no capacity limits; 5,000 of each type in each zone is
// more than any scenario launches.
func startLab(ctx context.Context) (*perfLab, error) {
	bed, err := labkit.Start(ctx, labkit.Options{
		Cluster: cluster, Region: region, NodeRole: nodeRole,
		BootDelay: bootDelay, Seed: 24, DefaultCapacity: 5000,
	})
	if err != nil {
		return nil, err
	}
	if err := applyBase(ctx, bed); err != nil {
		_ = bed.Stop()
		return nil, err
	}
	return &perfLab{Lab: bed}, nil
}

// applyBase creates what every scenario shares: the EC2NodeClass of
// examples/spot-fleet.yaml pointed at the lab's subnets and the workload
// namespace (the lab adds the tainted system nodes).
func applyBase(ctx context.Context, bed *labkit.Lab) error {
	class, _, err := labkit.ExampleFleet(cluster)
	if err != nil {
		return err
	}
	class.Name = nodeClassName
	if err := bed.Env.Client.Create(ctx, class); err != nil {
		return fmt.Errorf("creating the EC2NodeClass: %w", err)
	}
	return bed.Env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}

// controllerProc is the controller binary running against the lab, with
// its Prometheus endpoint.
type controllerProc struct {
	*labkit.Controller
	metrics string
}

// restartController stops the running controller, if any, and starts a
// fresh one, so a scenario's memory figures are its own.
func (l *perfLab) restartController() error {
	if l.controller != nil {
		l.controller.Stop()
	}
	// Its metrics (the Go runtime's heap among them) on a free loopback port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	p, err := l.SpawnController("--metrics-bind-address=" + metricsAddr)
	if err != nil {
		return err
	}
	l.controller = &controllerProc{Controller: p, metrics: "http://" + metricsAddr + "/metrics"}
	return nil
}
