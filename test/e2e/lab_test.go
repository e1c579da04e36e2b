package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodesmith/nodesmith/pkg/labkit"
)

const (
	labCluster = "lab"
	// exampleNodeRole is spec.role of examples/spot-fleet.yaml.
	exampleNodeRole = "NodesmithNodeRole-my-cluster"
	labRegion       = "us-east-1"
	bootDelay       = 2 * time.Second
	// labInterruptionQueue is the lab account's EventBridge target: the
	// simulated AWS puts every spot warning, rebalance recommendation and
	// instance state change on it. The interruption steps restart the
	// controller with --interruption-queue; the other steps run it without,
	// as before the queue existed (with it, the handler also re-marks claims
	// being deleted when the state changes of the instances the controller
	// itself terminates come back, which the other steps do not expect).
	// Its name is examples/terraform's default (<cluster>-nodesmith), the one
	// queue the Terraform policy lets the controller read.
	labInterruptionQueue = labCluster + "-nodesmith"
)

var lab *Lab

// Lab is the running end-to-end environment: the shared test bed
// (pkg/labkit) plus what only these steps need.
type Lab struct {
	*labkit.Lab
	Fleets *fleetLog
	// Faults throttles a share of EC2 calls and runs hooks around chosen
	// actions (crash_test.go).
	Faults *awsFaults

	// controller is the lab's current controller process.
	controller *labkit.Controller
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runLab(m))
}

func runLab(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The lab's clients log nothing worth reading; without a logger
	// controller-runtime prints a stack trace into the test output.
	ctrllog.SetLogger(logr.Discard())
	l, err := startLab(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: lab: %v\n", err)
		return 1
	}
	lab = l
	if d := testTimeout(); d > watchdogMargin {
		disarm := startWatchdog(l, time.Now().Add(d-watchdogMargin))
		defer disarm()
	}
	code := m.Run()
	// Last, where CI shows the tail of a red run.
	defer fmt.Print(steps.summary(time.Now()))
	cancel()
	if err := l.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: stopping the lab: %v\n", err)
		return 1
	}
	return code
}

// startLab brings up the test bed with the simulated AWS enforcing the
// Terraform example's policy behind the steps' request log and fault
// injector, applies the example fleet and starts the controller. The chart
// is rendered with spot-to-spot consolidation on: the lab's pool is spot
// only, so without it consolidation could delete spot nodes but never
// replace one with a cheaper spot node. The controller's garbage
// collection is faster than the chart's for CI time.
func startLab(ctx context.Context) (*Lab, error) {
	l := &Lab{Fleets: &fleetLog{}, Faults: newAWSFaults(7)}
	bed, err := labkit.Start(ctx, labkit.Options{
		Cluster: labCluster, Region: labRegion, NodeRole: exampleNodeRole,
		BootDelay: bootDelay, Seed: 7, DefaultCapacity: 1000,
		InterruptionQueue: labInterruptionQueue,
		EnforcePolicy:     true,
		ChartValues:       "featureGates:\n  SpotToSpotConsolidation: true\n",
		WrapAWS:           func(h http.Handler) http.Handler { return l.Faults.wrap(l.Fleets.wrap(h)) },
		ControllerFlags:   []string{"--gc-interval=5s", "--gc-grace=10s", "--registration-timeout=3m"},
	})
	if err != nil {
		return nil, err
	}
	l.Lab = bed
	if err := applyFleet(ctx, bed.Env.Client); err != nil {
		_ = bed.Stop()
		return nil, err
	}
	if err := l.startController(); err != nil {
		_ = bed.Stop()
		return nil, err
	}
	return l, nil
}

// startController starts the lab's controller process with the lab's
// flags; extra flags come after them, so a repeated flag overrides the
// lab's value.
func (l *Lab) startController(extra ...string) error {
	p, err := l.SpawnController(extra...)
	if err != nil {
		return err
	}
	l.controller = p
	return nil
}

// fleetLog records every CreateFleet request as it crosses the wire.
type fleetLog struct {
	mu       sync.Mutex
	requests []fleetRequest
}

type fleetRequest struct {
	At           time.Time
	CapacityType string
	Overrides    int
	Total        int
	// Families are the distinct instance families among the overrides.
	Families map[string]bool
}

var overrideRE = regexp.MustCompile(`^LaunchTemplateConfigs\.\d+\.Overrides\.\d+\.InstanceType$`)

func (f *fleetLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") == "CreateFleet" {
			req := fleetRequest{At: time.Now(), CapacityType: form.Get("TargetCapacitySpecification.DefaultTargetCapacityType"), Families: map[string]bool{}}
			req.Total, _ = strconv.Atoi(form.Get("TargetCapacitySpecification.TotalTargetCapacity"))
			for k := range form {
				if overrideRE.MatchString(k) {
					req.Overrides++
					family, _, _ := strings.Cut(form.Get(k), ".")
					req.Families[family] = true
				}
			}
			f.mu.Lock()
			f.requests = append(f.requests, req)
			f.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func (f *fleetLog) since(t time.Time) []fleetRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fleetRequest
	for _, r := range f.requests {
		if !r.At.Before(t) {
			out = append(out, r)
		}
	}
	return out
}
