// Command fake-aws serves the simulated AWS (EC2, IAM, SQS, SSM, Pricing and
// EKS DescribeCluster on one endpoint)
// on loopback, for the end-to-end lab and for trying Nodesmith without an
// AWS account. It runs the world in real time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/fakeaws/iampolicy"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fake-aws:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	world, ln, cfg, err := setup(args, os.Stdout)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go world.Run(ctx, 250*time.Millisecond)
	if cfg.interruptEvery > 0 {
		go interruptLoop(ctx, world, cfg.interruptEvery)
	}
	handler := fakeaws.NewServer(world)
	if cfg.policy != nil {
		handler.EnforcePolicy(cfg.policy, "")
		handler.OnDenial(func(d fakeaws.Denial) { fmt.Printf("fake-aws: denied %s on %s\n", d.Action, d.Resource) })
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

// runConfig holds the flags that act after setup.
type runConfig struct {
	interruptEvery time.Duration
	policy         *iampolicy.Policy
}

// setup parses flags, builds the world, opens the listener and prints how to use it.
func setup(args []string, out io.Writer) (*fakeaws.World, net.Listener, runConfig, error) {
	fs := flag.NewFlagSet("fake-aws", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:4566", "address to serve on (keep it on loopback: there is no authentication)")
	region := fs.String("region", "us-east-1", "region the world reports")
	zones := fs.String("zones", "us-east-1a,us-east-1b,us-east-1c", "comma-separated availability zones")
	bootDelay := fs.Duration("boot-delay", 20*time.Second, "how long instances stay pending")
	shutdownDelay := fs.Duration("shutdown-delay", 5*time.Second, "how long instances stay shutting-down")
	queue := fs.String("interruption-queue", "nodesmith-interruptions", "SQS queue receiving EventBridge-shaped instance events (empty: none)")
	capacity := fs.Int("capacity", 1000, "spare capacity per pool (instance type × zone × capacity type)")
	clusterName := fs.String("cluster-name", "nodesmith-lab", "pre-create a VPC, subnets and a security group tagged nodesmith.sh/discovery=<name> (empty: none)")
	k8sVersion := fs.String("kubernetes-version", "1.37", "Kubernetes version of the EKS-optimized AMI parameters")
	fullCatalog := fs.Bool("catalog", true, "sell every type of the embedded catalog (false: a small built-in list)")
	seed := fs.Int64("seed", 1, "seed for ids and random interruptions")
	interruptEvery := fs.Duration("interrupt-every", 0, "interrupt a random running spot instance this often (0: never)")
	extra := addExtraFlags(fs)
	var reservations reservationFlags
	fs.Var(&reservations, "capacity-reservation", "a capacity reservation, repeatable: type=m5.large,zone=us-east-1a,count=5[,id=cr-…][,match=open|targeted][,kind=default|capacity-block][,end=RFC3339][,owner=…][,interruptible=true][,tag.<key>=<value>]")
	roles := fs.String("roles", "NodesmithNodeRole-my-cluster", "comma-separated IAM roles that exist from the start (spec.role of an EC2NodeClass must name one; the examples use NodesmithNodeRole-my-cluster)")
	if err := fs.Parse(args); err != nil {
		return nil, nil, runConfig{}, err
	}
	zoneList := strings.Split(*zones, ",")
	opts := fakeaws.Options{
		Region: *region, Zones: zoneList, BootDelay: *bootDelay, ShutdownDelay: *shutdownDelay,
		InterruptionQueue: *queue, DefaultCapacity: *capacity, ClusterName: *clusterName,
		KubernetesVersion: *k8sVersion, Seed: *seed,
	}
	for _, r := range strings.Split(*roles, ",") {
		if r = strings.TrimSpace(r); r != "" {
			opts.Roles = append(opts.Roles, r)
		}
	}
	if *fullCatalog {
		specs, err := catalog.Specs()
		if err != nil {
			return nil, nil, runConfig{}, fmt.Errorf("loading the catalog: %w", err)
		}
		opts.Specs = fakeaws.SpecsFromCatalog(specs, *region, zoneList)
	}
	if len(opts.Specs) == 0 {
		opts.Specs = fakeaws.DefaultSpecs()
	}
	if err := extra.applyMarket(&opts); err != nil {
		return nil, nil, runConfig{}, err
	}
	world := fakeaws.NewWorld(opts)
	if err := reservations.apply(world); err != nil {
		return nil, nil, runConfig{}, err
	}
	policy, err := extra.loadPolicy(*clusterName, *region, world.Options().AccountID)
	if err != nil {
		return nil, nil, runConfig{}, err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return nil, nil, runConfig{}, fmt.Errorf("listening on %s: %w", *listen, err)
	}
	printBanner(out, "http://"+ln.Addr().String(), world, opts)
	if policy != nil {
		fmt.Fprintf(out, "IAM policy enforced: %d statements\n", len(policy.Statement))
	}
	return world, ln, runConfig{interruptEvery: *interruptEvery, policy: policy}, nil
}

// interruptLoop reclaims a random spot instance every period, as the spot
// market does now and then, so the interruption path can be watched end to end.
func interruptLoop(ctx context.Context, w *fakeaws.World, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if id, ok := w.InterruptRandom(); ok {
				fmt.Printf("fake-aws: spot interruption notice for %s\n", id)
			}
		}
	}
}

func printBanner(out io.Writer, endpoint string, w *fakeaws.World, o fakeaws.Options) {
	fmt.Fprintf(out, "fake-aws: EC2, IAM, SQS, SSM, Pricing and EKS on %s (region %s, zones %s, %d pools)\n",
		endpoint, o.Region, strings.Join(o.Zones, ","), len(w.Pools()))
	fmt.Fprintln(out, "Point the AWS SDK and CLI at it with:")
	fmt.Fprintf(out, "  export AWS_ENDPOINT_URL=%s\n", endpoint)
	fmt.Fprintf(out, "  export AWS_REGION=%s AWS_DEFAULT_REGION=%s\n", o.Region, o.Region)
	fmt.Fprintln(out, "  export AWS_ACCESS_KEY_ID=fake AWS_SECRET_ACCESS_KEY=fake")
	if o.InterruptionQueue != "" {
		fmt.Fprintf(out, "Interruption queue: %s/%s/%s\n", endpoint, w.Options().AccountID, o.InterruptionQueue)
	}
	if len(o.Roles) > 0 {
		fmt.Fprintf(out, "IAM roles: %s\n", strings.Join(o.Roles, ", "))
	}
	for _, cr := range w.CapacityReservations() {
		fmt.Fprintf(out, "Capacity reservation %s: %d × %s in %s (%s, %s)\n", cr.ID, cr.Total, cr.InstanceType, cr.Zone, cr.Type, cr.MatchCriteria)
	}
	if o.ClusterName != "" {
		fmt.Fprintf(out, "Cluster %q: subnets and security group tagged nodesmith.sh/discovery=%s\n", o.ClusterName, o.ClusterName)
		for _, s := range w.Subnets() {
			fmt.Fprintf(out, "  %s %s %s\n", s.ID, s.Zone, s.CIDR)
		}
	}
}
