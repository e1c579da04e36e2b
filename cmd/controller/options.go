package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/controllers"
	"github.com/nodesmith/nodesmith/pkg/controllers/disruptor"
	"github.com/nodesmith/nodesmith/pkg/controllers/interruption"
	"github.com/nodesmith/nodesmith/pkg/controllers/karpenter"
	"github.com/nodesmith/nodesmith/pkg/controllers/pricing"
	"github.com/nodesmith/nodesmith/pkg/disruption"
	interruptionpolicy "github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	awsprovider "github.com/nodesmith/nodesmith/pkg/providers/aws"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/provisioning/batcher"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Options are the controller's settings: flags, each defaulting to an
// environment variable (the Helm chart sets either).
type Options struct {
	ClusterName        string
	ClusterEndpoint    string
	ClusterCABundle    string
	ClusterServiceCIDR string
	KubernetesVersion  string
	SpotPriceInterval  time.Duration
	CatalogInterval    time.Duration
	// KarpenterCheckInterval is how often Karpenter's NodePools are read
	// for room (pkg/controllers/karpenter).
	KarpenterCheckInterval time.Duration
	InterruptionQueue      string
	InterruptionWorkers    int
	RebalanceMode          string
	// PodName is the controller's own Pod (POD_NAME), where interruption
	// queue problems are reported; empty outside a Pod.
	PodName     string
	BatchIdle   time.Duration
	BatchMax    time.Duration
	AWSRegion   string
	AWSEndpoint string
	// AWSMaxAttempts, AWSMaxBackoff and AWSAttemptTimeout configure the AWS
	// SDK's standard retryer and the per-attempt timeout of every AWS client.
	AWSMaxAttempts      int
	AWSMaxBackoff       time.Duration
	AWSAttemptTimeout   time.Duration
	MetricsAddr         string
	HealthAddr          string
	LeaderElect         bool
	LeaderElectionNS    string
	LogLevel            string
	FeatureGates        map[string]bool
	RegistrationTimeout time.Duration
	GCInterval          time.Duration
	GCGrace             time.Duration
	NominationTTL       time.Duration
	// DisruptionValidationDelay is how long a disruption plan waits before
	// it is planned again and what still holds is carried out.
	DisruptionValidationDelay time.Duration
	// ConsolidationMinSavings is the least share of its nodes' price a
	// consolidation must save.
	ConsolidationMinSavings float64
	// PreferencePolicy is Respect (soft constraints shape the plan) or
	// Ignore (the solver drops them), as Karpenter's PREFERENCE_POLICY.
	PreferencePolicy string
	// VMMemoryOverheadPercent is the share of an instance's memory the
	// hypervisor keeps, taken out of allocatable (0.075).
	VMMemoryOverheadPercent float64
	// ReservedENIs are network interfaces kept from pod networking, taken
	// out of the max-pods count (0).
	ReservedENIs int
	// KubeClientQPS and KubeClientBurst rate-limit the controller's
	// Kubernetes client.
	KubeClientQPS   int
	KubeClientBurst int
	// EnableProfiling serves Go's pprof under /debug/pprof/ on the metrics
	// address.
	EnableProfiling bool
	// Version asks for the build's version and commit, printed instead of running.
	Version bool
}

// knownGates are the feature switches this build understands, with their
// defaults (shared with the simulator).
var knownGates = controllers.DefaultFeatureGates()

// renamedGates are gates of earlier builds, refused with what replaced them.
var renamedGates = map[string]string{
	"Emptiness": `"Disruption" (empty nodes are the first thing the disruption controller removes, then drifted, expired and underutilized ones)`,
}

// parse reads args into Options; env supplies defaults. The --kubeconfig
// flag is controller-runtime's and lives on fs as well.
func parse(fs *flag.FlagSet, args []string, env func(string) string) (*Options, error) {
	o := &Options{}
	var gates string
	var errs []string
	str := func(p *string, name, envName, def, usage string) {
		v := def
		if e := env(envName); e != "" {
			v = e
		}
		fs.StringVar(p, name, v, usage+" (env "+envName+")")
	}
	num := func(p *int, name, envName string, def int, usage string) {
		v := def
		if e := env(envName); e != "" {
			n, err := strconv.Atoi(e)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s=%q is not a whole number", envName, e))
			} else {
				v = n
			}
		}
		fs.IntVar(p, name, v, usage+" (env "+envName+")")
	}
	dur := func(p *time.Duration, name, envName string, def time.Duration, usage string) {
		v := def
		if e := env(envName); e != "" {
			d, err := time.ParseDuration(e)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s=%q is not a duration", envName, e))
			} else {
				v = d
			}
		}
		fs.DurationVar(p, name, v, usage+" (env "+envName+")")
	}
	str(&o.ClusterName, "cluster-name", "CLUSTER_NAME", "", "name of the cluster; instances are tagged with it")
	str(&o.ClusterEndpoint, "cluster-endpoint", "CLUSTER_ENDPOINT", "", "API server endpoint nodes join (empty: from eks:DescribeCluster)")
	str(&o.ClusterCABundle, "cluster-ca-bundle", "CLUSTER_CA_BUNDLE", "", "base64 PEM CA bundle nodes trust (empty: from eks:DescribeCluster)")
	str(&o.ClusterServiceCIDR, "cluster-service-cidr", "CLUSTER_SERVICE_CIDR", "", "the cluster's service CIDR, for nodeadm (empty: from eks:DescribeCluster)")
	str(&o.KubernetesVersion, "kubernetes-version", "KUBERNETES_VERSION", "", "Kubernetes minor version naming the AMI alias SSM parameters, e.g. 1.37 (empty: the API server's)")
	dur(&o.SpotPriceInterval, "spot-price-refresh-interval", "SPOT_PRICE_REFRESH_INTERVAL", pricing.DefaultSpotInterval, "how often spot prices are read (DescribeSpotPriceHistory)")
	dur(&o.CatalogInterval, "catalog-refresh-interval", "CATALOG_REFRESH_INTERVAL", pricing.DefaultCatalogInterval, "how often on-demand prices (Pricing API) and offerings per zone are read")
	dur(&o.KarpenterCheckInterval, "karpenter-check-interval", "KARPENTER_CHECK_INTERVAL", karpenter.Interval, "how often Karpenter's NodePools are read; while one may still launch nodes, Nodesmith warns (log, Event, nodesmith_karpenter_nodepools_with_room)")
	str(&o.InterruptionQueue, "interruption-queue", "INTERRUPTION_QUEUE", "", "SQS queue (name or URL) of EC2 spot interruption, rebalance, state-change and AWS Health events; its nodes are replaced and drained before they go (empty: off)")
	num(&o.InterruptionWorkers, "interruption-workers", "INTERRUPTION_WORKERS", interruption.DefaultWorkers, "instances of one batch of interruption messages handled in parallel")
	str(&o.RebalanceMode, "rebalance-mode", "REBALANCE_MODE", string(interruptionpolicy.DefaultRebalanceMode),
		"what a rebalance recommendation does: off (an Event only), prespin (launch the replacement now, drain only when an interruption notice follows) or drain (launch, then drain once the replacement is ready and the NodePool's budget allows)")
	dur(&o.BatchIdle, "batch-idle-duration", "BATCH_IDLE_DURATION", batcher.DefaultIdle, "a batch closes after this long without a new pending pod")
	dur(&o.BatchMax, "batch-max-duration", "BATCH_MAX_DURATION", batcher.DefaultMax, "a batch closes at the latest this long after its first pod")
	str(&o.AWSRegion, "aws-region", "AWS_REGION", "", "AWS region (empty: from IMDS)")
	str(&o.AWSEndpoint, "aws-endpoint", "AWS_ENDPOINT_URL", "", "override the AWS endpoint (a simulated AWS)")
	num(&o.AWSMaxAttempts, "aws-max-attempts", "AWS_MAX_ATTEMPTS", awsprovider.DefaultMaxAttempts,
		"attempts per AWS API call, the first included; throttling, 5xx answers, timeouts and broken connections are retried with exponential backoff and full jitter by the AWS SDK's standard retryer")
	dur(&o.AWSMaxBackoff, "aws-max-backoff", "AWS_MAX_BACKOFF", awsprovider.DefaultMaxBackoff, "the longest pause between two attempts of an AWS API call")
	dur(&o.AWSAttemptTimeout, "aws-attempt-timeout", "AWS_ATTEMPT_TIMEOUT", awsprovider.DefaultAttemptTimeout,
		"one attempt of an AWS API call that has not answered in this long is cut and retried; must exceed SQS's 20 s long poll")
	str(&o.MetricsAddr, "metrics-bind-address", "METRICS_BIND_ADDRESS", ":8080", "Prometheus metrics address (0: off)")
	str(&o.HealthAddr, "health-probe-bind-address", "HEALTH_PROBE_BIND_ADDRESS", ":8081", "health and readiness probe address")
	str(&o.LeaderElectionNS, "leader-election-namespace", "POD_NAMESPACE", "kube-system", "namespace of the leader election lease")
	str(&o.LogLevel, "log-level", "LOG_LEVEL", "info", "debug, info or error")
	str(&gates, "feature-gates", "FEATURE_GATES", "", "feature switches, e.g. SpotToSpotConsolidation=true,NodeRepair=true")
	dur(&o.RegistrationTimeout, "registration-timeout", "REGISTRATION_TIMEOUT", lifecycle.DefaultTimeouts().Registration, "a launched instance whose node does not register in time is terminated")
	dur(&o.GCInterval, "gc-interval", "GC_INTERVAL", 30*time.Second, "how often cloud instances are reconciled against NodeClaims")
	dur(&o.GCGrace, "gc-grace", "GC_GRACE", 30*time.Second, "how old an unaccounted instance must be before it is terminated")
	dur(&o.NominationTTL, "nomination-ttl", "NOMINATION_TTL", provisioning.DefaultNominationTTL, "how long a pod planned onto a node that is neither ready nor a launching NodeClaim is kept out of new batches (a nomination onto a launching NodeClaim lasts until it initializes or is deleted)")
	dur(&o.DisruptionValidationDelay, "disruption-validation-delay", "DISRUPTION_VALIDATION_DELAY", disruptor.DefaultValidationDelay,
		"a disruption is carried out only if it still holds when planned again this much later")
	str(&o.PreferencePolicy, "preference-policy", "PREFERENCE_POLICY", string(scheduling.PreferenceRespect),
		"Respect: preferred affinity, preferred spread and ScheduleAnyway spread shape the plan (relaxed one at a time when they cannot all hold); Ignore: the solver drops them")
	num(&o.ReservedENIs, "reserved-enis", "RESERVED_ENIS", 0, "network interfaces per instance kept from pod networking (e.g. for custom networking), taken out of the max-pods count")
	num(&o.KubeClientQPS, "kube-client-qps", "KUBE_CLIENT_QPS", 200, "sustained requests per second to the Kubernetes API server")
	num(&o.KubeClientBurst, "kube-client-burst", "KUBE_CLIENT_BURST", 400, "requests the Kubernetes client may send at once above --kube-client-qps")
	overhead := catalog.DefaultVMMemoryOverheadPercent
	if e := env("VM_MEMORY_OVERHEAD_PERCENT"); e != "" {
		f, err := strconv.ParseFloat(e, 64)
		if err != nil {
			errs = append(errs, fmt.Sprintf("VM_MEMORY_OVERHEAD_PERCENT=%q is not a number", e))
		}
		overhead = f
	}
	fs.Float64Var(&o.VMMemoryOverheadPercent, "vm-memory-overhead-percent", overhead,
		"share of an instance's memory the hypervisor keeps, taken out of allocatable, e.g. 0.075 (env VM_MEMORY_OVERHEAD_PERCENT)")
	profiling := false
	if e := env("ENABLE_PROFILING"); e != "" {
		b, err := strconv.ParseBool(e)
		if err != nil {
			errs = append(errs, fmt.Sprintf("ENABLE_PROFILING=%q is not a boolean", e))
		}
		profiling = b
	}
	fs.BoolVar(&o.EnableProfiling, "enable-profiling", profiling, "serve Go's pprof under /debug/pprof/ on the metrics address (env ENABLE_PROFILING)")
	minSavings := disruption.DefaultMinSavingsShare
	if e := env("CONSOLIDATION_MIN_SAVINGS"); e != "" {
		f, err := strconv.ParseFloat(e, 64)
		if err != nil {
			errs = append(errs, fmt.Sprintf("CONSOLIDATION_MIN_SAVINGS=%q is not a number", e))
		}
		minSavings = f
	}
	fs.Float64Var(&o.ConsolidationMinSavings, "consolidation-min-savings", minSavings,
		"the least share of the replaced nodes' price a consolidation must save, e.g. 0.10 (env CONSOLIDATION_MIN_SAVINGS)")
	leader := true
	if e := env("LEADER_ELECT"); e != "" {
		b, err := strconv.ParseBool(e)
		if err != nil {
			errs = append(errs, fmt.Sprintf("LEADER_ELECT=%q is not a boolean", e))
		}
		leader = b
	}
	fs.BoolVar(&o.LeaderElect, "leader-elect", leader, "elect a leader among replicas (env LEADER_ELECT)")
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	fs.BoolVar(&o.Version, "version", false, "print the version and commit and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.Version {
		return o, nil
	}
	g, err := parseGates(gates)
	if err != nil {
		return nil, err
	}
	o.FeatureGates = g
	o.PodName = env("POD_NAME")
	return o, o.validate()
}

func (o *Options) validate() error {
	var errs []string
	if o.ClusterName == "" {
		errs = append(errs, "--cluster-name (CLUSTER_NAME) is required")
	}
	if o.BatchIdle <= 0 || o.BatchMax < o.BatchIdle {
		errs = append(errs, fmt.Sprintf("batch windows need 0 < idle (%s) <= max (%s)", o.BatchIdle, o.BatchMax))
	}
	if _, err := interruptionpolicy.ParseRebalanceMode(o.RebalanceMode); err != nil {
		errs = append(errs, "--rebalance-mode: "+err.Error())
	}
	if o.InterruptionWorkers < 1 {
		errs = append(errs, "--interruption-workers must be at least 1")
	}
	if o.SpotPriceInterval <= 0 || o.CatalogInterval <= 0 {
		errs = append(errs, "--spot-price-refresh-interval and --catalog-refresh-interval must be positive")
	}
	if o.KarpenterCheckInterval <= 0 {
		errs = append(errs, fmt.Sprintf("--karpenter-check-interval %s: must be positive", o.KarpenterCheckInterval))
	}
	if v := o.KubernetesVersion; v != "" && !validMinor(v) {
		errs = append(errs, fmt.Sprintf("--kubernetes-version %q: want major.minor, e.g. 1.37", v))
	}
	if o.AWSMaxAttempts < 1 {
		errs = append(errs, fmt.Sprintf("--aws-max-attempts %d: want at least 1 (1 turns retries off)", o.AWSMaxAttempts))
	}
	if o.AWSMaxBackoff <= 0 {
		errs = append(errs, "--aws-max-backoff must be positive")
	}
	if o.AWSAttemptTimeout <= interruption.DefaultWaitTime {
		errs = append(errs, fmt.Sprintf("--aws-attempt-timeout %s: must exceed the interruption queue's %s long poll", o.AWSAttemptTimeout, interruption.DefaultWaitTime))
	}
	if o.RegistrationTimeout <= 0 {
		errs = append(errs, "--registration-timeout must be positive")
	}
	if o.DisruptionValidationDelay <= 0 {
		errs = append(errs, "--disruption-validation-delay must be positive")
	}
	if o.ConsolidationMinSavings <= 0 || o.ConsolidationMinSavings > 1 {
		errs = append(errs, fmt.Sprintf("--consolidation-min-savings %v: want a share above 0 and at most 1 (0.10 is 10 %%)", o.ConsolidationMinSavings))
	}
	switch scheduling.PreferencePolicy(o.PreferencePolicy) {
	case scheduling.PreferenceRespect, scheduling.PreferenceIgnore:
	default:
		errs = append(errs, fmt.Sprintf("--preference-policy %q: want Respect or Ignore", o.PreferencePolicy))
	}
	if o.VMMemoryOverheadPercent < 0 || o.VMMemoryOverheadPercent >= 1 {
		errs = append(errs, fmt.Sprintf("--vm-memory-overhead-percent %v: want a share from 0 to below 1 (0.075 is 7.5 %%)", o.VMMemoryOverheadPercent))
	}
	if o.ReservedENIs < 0 {
		errs = append(errs, fmt.Sprintf("--reserved-enis %d: want 0 or more", o.ReservedENIs))
	}
	if o.KubeClientQPS < 1 || o.KubeClientBurst < o.KubeClientQPS {
		errs = append(errs, fmt.Sprintf("--kube-client-qps %d and --kube-client-burst %d: want 1 <= qps <= burst", o.KubeClientQPS, o.KubeClientBurst))
	}
	switch o.LogLevel {
	case "debug", "info", "error":
	default:
		errs = append(errs, fmt.Sprintf("--log-level %q: want debug, info or error", o.LogLevel))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid options: %s", strings.Join(errs, "; "))
	}
	return nil
}

// parseGates reads "A=true,B=false" over the known gates' defaults.
func parseGates(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for k, v := range knownGates {
		out[k] = v
	}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("feature gate %q: want Name=true|false", kv)
		}
		if to, renamed := renamedGates[k]; renamed {
			return nil, fmt.Errorf("feature gate %q was replaced by %s", k, to)
		}
		if _, known := knownGates[k]; !known {
			return nil, fmt.Errorf("unknown feature gate %q", k)
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("feature gate %s=%q: not a boolean", k, v)
		}
		out[k] = b
	}
	if err := controllers.CheckFeatureGates(out); err != nil {
		return nil, err
	}
	return out, nil
}

func getenv(k string) string { return os.Getenv(k) }

// validMinor reports whether v is major.minor in digits ("1.37").
func validMinor(v string) bool {
	major, minor, ok := strings.Cut(v, ".")
	return ok && major != "" && minor != "" && strings.Trim(major+minor, "0123456789") == ""
}
