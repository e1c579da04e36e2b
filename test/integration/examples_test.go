package integration

import (
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	v1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/test/testenv"
)

// TestExamplesAreAccepted applies every example the way a user would
// (server-side apply, which is always strict about unknown fields), reads
// each object back, and checks that nothing the example says was dropped.
func TestExamplesAreAccepted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("want at least the spot fleet and default pool examples, found %v", files)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			objs := readObjects(t, file)
			if len(objs) == 0 {
				t.Fatalf("%s holds no objects", file)
			}
			for _, obj := range objs {
				applied := obj.DeepCopy()
				ac := client.ApplyConfigurationFromUnstructured(obj)
				if err := env.Client.Apply(t.Context(), ac, client.FieldOwner("examples-test"), client.ForceOwnership); err != nil {
					t.Fatalf("applying %s %s: %v", obj.GetKind(), obj.GetName(), err)
				}
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(obj.GroupVersionKind())
				if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
					t.Fatalf("reading back %s %s: %v", obj.GetKind(), obj.GetName(), err)
				}
				if d := subset("spec", applied.Object["spec"], got.Object["spec"]); d != "" {
					t.Errorf("%s %s read back differs from the example: %s", obj.GetKind(), obj.GetName(), d)
				}
			}
		})
	}
}

// TestExampleDefaults checks what the API server fills in for fields the
// examples leave out, read through the Go types the controllers use.
func TestExampleDefaults(t *testing.T) {
	for _, f := range []string{"spot-fleet.yaml", "default-nodepool.yaml"} {
		for _, obj := range readObjects(t, filepath.Join(testenv.RepoRoot(), "examples", f)) {
			ac := client.ApplyConfigurationFromUnstructured(obj)
			if err := env.Client.Apply(t.Context(), ac, client.FieldOwner("examples-test"), client.ForceOwnership); err != nil {
				t.Fatalf("applying %s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"default pool: expireAfter defaults to 720h", func(t *testing.T) {
			np := getNodePool(t, "default")
			if d := np.Spec.Template.Spec.ExpireAfter.Duration; d == nil || *d != 720*time.Hour {
				t.Errorf("expireAfter = %v, want 720h", np.Spec.Template.Spec.ExpireAfter.ToUnstructured())
			}
		}},
		{"default pool: budgets default to one of 10%", func(t *testing.T) {
			np := getNodePool(t, "default")
			b := np.Spec.Disruption.Budgets
			if len(b) != 1 || b[0].Nodes != "10%" || b[0].Schedule != nil || b[0].Duration != nil || len(b[0].Reasons) != 0 {
				t.Errorf("budgets = %+v, want [{nodes: 10%%}]", b)
			}
		}},
		{"default pool: consolidateAfter and grace period kept as written", func(t *testing.T) {
			np := getNodePool(t, "default")
			if d := np.Spec.Disruption.ConsolidateAfter.Duration; d == nil || *d != 30*time.Second {
				t.Errorf("consolidateAfter = %v, want 30s", np.Spec.Disruption.ConsolidateAfter.ToUnstructured())
			}
			if g := np.Spec.Template.Spec.TerminationGracePeriod; g == nil || g.Duration != time.Hour {
				t.Errorf("terminationGracePeriod = %v, want 1h", g)
			}
			if np.Spec.Weight != nil {
				t.Errorf("weight = %d, want unset", *np.Spec.Weight)
			}
		}},
		{"spot fleet: limits, minValues, budgets and weight as written", func(t *testing.T) {
			np := getNodePool(t, "spot-fleet")
			if q := np.Spec.Limits["cpu"]; q.Cmp(resource.MustParse("1000")) != 0 {
				t.Errorf("limits.cpu = %s, want 1000", q.String())
			}
			if q := np.Spec.Limits["memory"]; q.Cmp(resource.MustParse("1000Gi")) != 0 {
				t.Errorf("limits.memory = %s, want 1000Gi", q.String())
			}
			reqs := np.Spec.Template.Spec.Requirements
			if len(reqs) != 4 || reqs[0].MinValues == nil || *reqs[0].MinValues != 3 || len(reqs[0].Values) != 6 {
				t.Errorf("requirements = %+v, want instance-family over 6 families with minValues 3 first", reqs)
			}
			b := np.Spec.Disruption.Budgets
			if len(b) != 2 || b[1].Duration == nil || b[1].Duration.Duration != 8*time.Hour || b[1].Schedule == nil || *b[1].Schedule != "0 9 * * mon-fri" {
				t.Errorf("budgets = %+v, want 10%% and a weekday 8h window", b)
			}
			if np.Spec.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyWhenEmptyOrUnderutilized {
				t.Errorf("consolidationPolicy = %q", np.Spec.Disruption.ConsolidationPolicy)
			}
			if np.Spec.Weight == nil || *np.Spec.Weight != 50 {
				t.Errorf("weight = %v, want 50", np.Spec.Weight)
			}
		}},
		{"node class: metadataOptions default to IMDSv2 with hop limit 1", func(t *testing.T) {
			nc := &awsv1.EC2NodeClass{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: "spot-fleet"}, nc); err != nil {
				t.Fatal(err)
			}
			m := nc.Spec.MetadataOptions
			if m == nil || deref(m.HTTPEndpoint) != "enabled" || deref(m.HTTPProtocolIPv6) != "disabled" ||
				m.HTTPPutResponseHopLimit == nil || *m.HTTPPutResponseHopLimit != 1 || deref(m.HTTPTokens) != "required" {
				t.Errorf("metadataOptions = %+v, want enabled/disabled/1/required", m)
			}
		}},
		{"node class: the root volume is kept as written", func(t *testing.T) {
			nc := &awsv1.EC2NodeClass{}
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: "default"}, nc); err != nil {
				t.Fatal(err)
			}
			bdm := nc.Spec.BlockDeviceMappings
			if len(bdm) != 1 || !bdm[0].RootVolume || bdm[0].EBS.VolumeSize == nil || bdm[0].EBS.VolumeSize.String() != "50Gi" {
				t.Errorf("blockDeviceMappings = %+v, want one 50Gi root volume", bdm)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func getNodePool(t *testing.T, name string) *v1.NodePool {
	t.Helper()
	np := &v1.NodePool{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, np); err != nil {
		t.Fatalf("getting nodepool %s: %v", name, err)
	}
	return np
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
