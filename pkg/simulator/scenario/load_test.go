package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/nodesmith/nodesmith/examples/scenarios"
)

func TestExamplesParse(t *testing.T) {
	entries, err := scenarios.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no example scenarios embedded")
	}
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			b, err := scenarios.FS.ReadFile(e.Name())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(b); err != nil {
				t.Fatalf("Parse: %v", err)
			}
		})
	}
}

// The long scenarios (outside the golden set) parse too.
func TestLongExamplesParse(t *testing.T) {
	n := 0
	for _, name := range scenarios.Names() {
		b, err := scenarios.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(b); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		n++
	}
	if _, err := scenarios.Read("day.yaml"); err != nil || n < 2 {
		t.Fatalf("day.yaml: %v; %d built-in scenarios", err, n)
	}
}

func TestDefaultScenario(t *testing.T) {
	b, err := scenarios.FS.ReadFile(scenarios.Default)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.World.BootDelay.Duration; got != 40*time.Second {
		t.Errorf("boot delay = %s, want 40s", got)
	}
	k := s.QueueWorkers[0].KEDA()
	if k.QueueLength != 10 || k.MaxReplicas != 20 || k.MinReplicas != 0 || !k.ScaleOnInFlight ||
		k.PollingInterval != 15*time.Second || k.CooldownPeriod != 120*time.Second {
		t.Errorf("scaler = %+v, want the lab's queueLength 10, 0..20, 15s, 120s, in-flight", k)
	}
	np := s.NodePools[0]
	if got := np.Spec.Disruption.Budgets; len(got) != 1 || got[0].Nodes != "10%" {
		t.Errorf("budgets = %+v, want one of 10%%", got)
	}
	if got := *np.Spec.Disruption.ConsolidateAfter.Duration; got != 30*time.Second {
		t.Errorf("consolidateAfter = %s, want 30s", got)
	}
	if len(s.SystemNodes) != 2 || s.SystemNodes[0].CapacityType != "on-demand" {
		t.Errorf("system nodes = %+v, want two on-demand", s.SystemNodes)
	}
}

func TestParseErrors(t *testing.T) {
	base := `
name: t
duration: 10m
nodeClasses: [{metadata: {name: default}, spec: {amiSelectorTerms: [{alias: al2023@latest}], subnetSelectorTerms: [{id: s}], securityGroupSelectorTerms: [{id: g}]}}]
nodePools: [{metadata: {name: p}, spec: {template: {spec: {nodeClassRef: {group: aws.nodesmith.sh, kind: EC2NodeClass, name: default}}}}}]
queues: [{name: q}]
`
	tests := []struct {
		name    string
		extra   string
		wantErr string
	}{
		{name: "minimal is valid"},
		{name: "unknown field", extra: "bogus: 1\n", wantErr: "unknown field"},
		{name: "event without action", extra: "events: [{at: 1s}]\n", wantErr: "exactly one of"},
		{name: "event after the end", extra: "events: [{at: 11m, sendMessages: {queue: q, count: 1}}]\n", wantErr: "outside the run"},
		{name: "undeclared queue", extra: "events: [{at: 1s, sendMessages: {queue: nope, count: 1}}]\n", wantErr: "not declared"},
		{name: "worker without processing time", extra: "queueWorkers: [{name: w, queue: q, template: {}, scaler: {}}]\n", wantErr: "processingTime"},
		{name: "duplicate workload", extra: "jobs: [{name: a, duration: 1s, template: {}}, {name: a, duration: 1s, template: {}}]\n", wantErr: "unique"},
		{name: "storage is valid", extra: "persistentVolumes: [{metadata: {name: pv}}]\npersistentVolumeClaims: [{metadata: {name: c}, spec: {volumeName: pv}}]\n"},
		{name: "claim bound to an undeclared volume", extra: "persistentVolumeClaims: [{metadata: {name: c}, spec: {volumeName: pv}}]\n",
			wantErr: `persistentVolumeClaim c: volumeName "pv" is not one of the persistentVolumes`},
		{name: "duplicate storage class", extra: "storageClasses: [{metadata: {name: gp3}}, {metadata: {name: gp3}}]\n", wantErr: `storageClass names must be set and unique, got "gp3"`},
		{name: "ami release", extra: "events: [{at: 1m, amiRelease: {release: v20260105}}]\n"},
		{name: "ami release without a name", extra: "events: [{at: 1m, amiRelease: {}}]\n", wantErr: `amiRelease needs a release name without spaces or slashes (like v20260105), got ""`},
		{name: "node condition on no pool", extra: "events: [{at: 1m, nodeCondition: {pool: nope}}]\n", wantErr: `nodeCondition needs one of the nodePools`},
		{name: "a healthy node condition", extra: "events: [{at: 1m, nodeCondition: {pool: p, status: \"True\"}}]\n", wantErr: `nodeCondition status "True": want False or Unknown`},
		{name: "boot jitter", extra: "world: {bootDelay: 20s, bootJitter: 40s}\n"},
		{name: "negative boot jitter", extra: "world: {bootJitter: -5s}\n", wantErr: "world.bootJitter must not be negative, got -5s"},
		{name: "scaler max below min", extra: "queueWorkers: [{name: w, queue: q, processingTime: 1s, template: {}, scaler: {minReplicaCount: 5, maxReplicaCount: 2}}]\n", wantErr: "maxReplicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(base + tt.extra))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
