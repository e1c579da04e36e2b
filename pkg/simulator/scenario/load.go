package scenario

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/disruption/budget"
	"github.com/nodesmith/nodesmith/pkg/simulator/keda"
)

// LoadFile reads, defaults and validates the scenario in path.
func LoadFile(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	return s, nil
}

// Parse decodes YAML (unknown fields are errors, so a typo is not silently
// ignored), applies defaults and validates.
func Parse(b []byte) (*Scenario, error) {
	var s Scenario
	if err := yaml.UnmarshalStrict(b, &s); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	s.Default()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Default fills unset fields. NodePools get the defaults their CRD would give
// them on the API server, since no API server sees them here.
func (s *Scenario) Default() {
	setDur(&s.SampleInterval, 5*time.Second)
	w := &s.World
	if w.Region == "" {
		w.Region = "us-east-1"
	}
	if len(w.Zones) == 0 {
		w.Zones = []string{w.Region + "a", w.Region + "b", w.Region + "c"}
	}
	if w.ClusterName == "" {
		w.ClusterName = "nodesmith-sim"
	}
	if w.DefaultCapacity == 0 {
		w.DefaultCapacity = 1000
	}
	setDur(&w.BootDelay, 40*time.Second)
	setDur(&w.PodStartDelay, 2*time.Second)
	setDur(&w.ShutdownDelay, 30*time.Second)
	for i := range s.NodePools {
		defaultNodePool(&s.NodePools[i])
	}
	for i := range s.SystemNodes {
		if s.SystemNodes[i].CapacityType == "" {
			s.SystemNodes[i].CapacityType = nsv1.CapacityTypeOnDemand
		}
	}
	for i := range s.Queues {
		setDur(&s.Queues[i].VisibilityTimeout, 30*time.Second)
	}
	for i := range s.QueueWorkers {
		q := &s.QueueWorkers[i]
		if q.Concurrency == 0 {
			q.Concurrency = 1
		}
		setDur(&q.WaitTime, 20*time.Second)
		sc := &q.Scaler
		if sc.QueueLength == 0 {
			sc.QueueLength = 5
		}
		if sc.MaxReplicaCount == 0 {
			sc.MaxReplicaCount = 100
		}
		setDur(&sc.PollingInterval, 30*time.Second)
		setDur(&sc.CooldownPeriod, 300*time.Second)
		if sc.ScaleOnInFlight == nil {
			t := true
			sc.ScaleOnInFlight = &t
		}
	}
	for i := range s.Jobs {
		j := &s.Jobs[i]
		if j.Parallelism == 0 {
			j.Parallelism = 1
		}
		if j.Completions == 0 {
			j.Completions = j.Parallelism
		}
	}
	for i := range s.Events {
		if si := s.Events[i].RebalanceRecommendation; si != nil && si.Count == 0 {
			si.Count = 1
		}
		if si := s.Events[i].SpotInterruption; si != nil && si.Count == 0 {
			si.Count = 1
		}
	}
}

func defaultNodePool(np *nsv1.NodePool) {
	d := &np.Spec.Disruption
	if d.ConsolidationPolicy == "" {
		d.ConsolidationPolicy = nsv1.ConsolidationPolicyWhenEmptyOrUnderutilized
	}
	if d.ConsolidateAfter.IsZero() {
		d.ConsolidateAfter = nsv1.MustParseNillableDuration("0s")
	}
	if len(d.Budgets) == 0 {
		d.Budgets = append([]nsv1.Budget(nil), budget.Default...)
	}
	if np.Spec.Template.Spec.ExpireAfter.IsZero() {
		np.Spec.Template.Spec.ExpireAfter = nsv1.MustParseNillableDuration("720h")
	}
}

func setDur(d *metav1.Duration, def time.Duration) {
	if d.Duration == 0 {
		d.Duration = def
	}
}

// KEDA returns the scaler model's configuration of a queue worker.
func (q QueueWorker) KEDA() keda.Config {
	return keda.Config{
		QueueLength:           q.Scaler.QueueLength,
		ActivationQueueLength: q.Scaler.ActivationQueueLength,
		MinReplicas:           q.Scaler.MinReplicaCount,
		MaxReplicas:           q.Scaler.MaxReplicaCount,
		PollingInterval:       q.Scaler.PollingInterval.Duration,
		CooldownPeriod:        q.Scaler.CooldownPeriod.Duration,
		ScaleOnInFlight:       q.Scaler.ScaleOnInFlight == nil || *q.Scaler.ScaleOnInFlight,
		ScaleOnDelayed:        q.Scaler.ScaleOnDelayed,
	}
}

// Validate reports every problem found, joined.
func (s *Scenario) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s.Name == "" {
		add("name is required")
	}
	if s.Duration.Duration <= 0 {
		add("duration must be positive")
	}
	if s.SampleInterval.Duration <= 0 {
		add("sampleInterval must be positive")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"bootDelay", s.World.BootDelay.Duration}, {"bootJitter", s.World.BootJitter.Duration}, {"shutdownDelay", s.World.ShutdownDelay.Duration}} {
		if d.v < 0 {
			add("world.%s must not be negative, got %s", d.name, d.v)
		}
	}
	zones := map[string]bool{}
	for _, z := range s.World.Zones {
		zones[z] = true
	}
	classes := map[string]bool{}
	for _, nc := range s.NodeClasses {
		if nc.Name == "" {
			add("every nodeClass needs metadata.name")
		}
		classes[nc.Name] = true
	}
	if len(s.NodePools) == 0 {
		add("at least one nodePool is required")
	}
	names := map[string]bool{}
	for _, np := range s.NodePools {
		if np.Name == "" || names["pool/"+np.Name] {
			add("nodePool names must be set and unique, got %q", np.Name)
		}
		names["pool/"+np.Name] = true
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil || !classes[ref.Name] {
			add("nodePool %s: nodeClassRef must name one of the nodeClasses", np.Name)
		}
	}
	for _, n := range s.SystemNodes {
		if n.Name == "" || n.InstanceType == "" || !zones[n.Zone] {
			add("systemNode %q needs a name, an instanceType and one of the world's zones", n.Name)
		}
	}
	queues := map[string]bool{}
	for _, q := range s.Queues {
		if q.Name == "" || queues[q.Name] {
			add("queue names must be set and unique, got %q", q.Name)
		}
		queues[q.Name] = true
	}
	for _, d := range s.Deployments {
		s.checkWorkloadName(names, d.Name, add)
		if len(d.Replicas) == 0 {
			add("deployment %s: replicas schedule is empty", d.Name)
		}
	}
	for _, q := range s.QueueWorkers {
		s.checkWorkloadName(names, q.Name, add)
		if !queues[q.Queue] {
			add("queueWorker %s: queue %q is not declared under queues", q.Name, q.Queue)
		}
		if q.ProcessingTime.Duration <= 0 {
			add("queueWorker %s: processingTime must be positive", q.Name)
		}
		if err := q.KEDA().Validate(); err != nil {
			add("queueWorker %s: scaler: %w", q.Name, err)
		}
	}
	for _, j := range s.Jobs {
		s.checkWorkloadName(names, j.Name, add)
		if j.Duration.Duration <= 0 || j.Parallelism < 0 || j.Completions < 0 {
			add("job %s: duration must be positive and counts non-negative", j.Name)
		}
	}
	switch s.Controller.RebalanceMode {
	case "", "off", "prespin", "drain":
	default:
		add("controller.rebalanceMode %q: want off, prespin or drain", s.Controller.RebalanceMode)
	}
	pdbs := map[string]bool{}
	for _, b := range s.PodDisruptionBudgets {
		key := b.Namespace + "/" + b.Name
		switch {
		case b.Name == "" || pdbs[key]:
			add("podDisruptionBudget names must be set and unique, got %q", b.Name)
		case b.Spec.Selector == nil || (len(b.Spec.Selector.MatchLabels) == 0 && len(b.Spec.Selector.MatchExpressions) == 0):
			add("podDisruptionBudget %s: a selector with labels or expressions is required (an empty one would select every pod of its namespace)", b.Name)
		case (b.Spec.MinAvailable == nil) == (b.Spec.MaxUnavailable == nil):
			add("podDisruptionBudget %s: exactly one of minAvailable and maxUnavailable must be set", b.Name)
		}
		pdbs[key] = true
	}
	s.validateStorage(add)
	static := map[string]bool{}
	for _, np := range s.NodePools {
		static[np.Name] = np.IsStatic()
	}
	for i, e := range s.Events {
		n := 0
		for _, set := range []bool{e.SendMessages != nil, e.SpotInterruption != nil, e.ICE != nil, e.PriceChange != nil, e.DeleteNodes != nil, e.RebalanceRecommendation != nil, e.AMIRelease != nil, e.NodeCondition != nil, e.ScaleNodePool != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			add("event %d (at %s): exactly one of sendMessages, spotInterruption, rebalanceRecommendation, ice, priceChange, deleteNodes, amiRelease, nodeCondition, scaleNodePool must be set", i, e.At.Duration)
		}
		if e.At.Duration < 0 || e.At.Duration > s.Duration.Duration {
			add("event %d: at %s is outside the run", i, e.At.Duration)
		}
		if e.SendMessages != nil && !queues[e.SendMessages.Queue] {
			add("event %d: queue %q is not declared", i, e.SendMessages.Queue)
		}
		if r := e.AMIRelease; r != nil && (r.Release == "" || strings.ContainsAny(r.Release, " /")) {
			add("event %d: amiRelease needs a release name without spaces or slashes (like v20260105), got %q", i, r.Release)
		}
		if c := e.NodeCondition; c != nil {
			if !names["pool/"+c.Pool] || c.Count < 0 {
				add("event %d: nodeCondition needs one of the nodePools and a non-negative count, got pool %q count %d", i, c.Pool, c.Count)
			}
			if c.Status != "" && c.Status != "False" && c.Status != "Unknown" {
				add("event %d: nodeCondition status %q: want False or Unknown (an unhealthy state)", i, c.Status)
			}
		}
		if d := e.DeleteNodes; d != nil && (!names["pool/"+d.Pool] || d.Count < 0) {
			add("event %d: deleteNodes needs one of the nodePools and a non-negative count, got pool %q count %d", i, d.Pool, d.Count)
		}
		if sc := e.ScaleNodePool; sc != nil && (!static[sc.Pool] || sc.Replicas < 0) {
			add("event %d: scaleNodePool needs a static nodePool (one with spec.replicas) and a non-negative replicas, got pool %q replicas %d", i, sc.Pool, sc.Replicas)
		}
	}
	return errors.Join(errs...)
}

func (s *Scenario) checkWorkloadName(seen map[string]bool, name string, add func(string, ...any)) {
	if name == "" || seen["w/"+name] || strings.ContainsAny(name, " /") {
		add("workload names must be set, unique and DNS-like, got %q", name)
	}
	seen["w/"+name] = true
}

// validateStorage: every StorageClass, PersistentVolume and claim is named,
// once; a claim bound to a volume names one of the scenario's (nothing
// would ever create it).
func (s *Scenario) validateStorage(add func(string, ...any)) {
	seen := map[string]bool{}
	unique := func(kind, key, name string) {
		if name == "" || seen[kind+"/"+key] {
			add("%s names must be set and unique, got %q", kind, name)
		}
		seen[kind+"/"+key] = true
	}
	for _, c := range s.StorageClasses {
		unique("storageClass", c.Name, c.Name)
	}
	for _, v := range s.PersistentVolumes {
		unique("persistentVolume", v.Name, v.Name)
	}
	for _, c := range s.PersistentVolumeClaims {
		unique("persistentVolumeClaim", c.Namespace+"/"+c.Name, c.Name)
		if v := c.Spec.VolumeName; v != "" && !seen["persistentVolume/"+v] {
			add("persistentVolumeClaim %s: volumeName %q is not one of the persistentVolumes", c.Name, v)
		}
	}
}
