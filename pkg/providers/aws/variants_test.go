package aws

import (
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/providers/aws/userdata"
)

var variantTypes = []string{"m5.large", "m6g.large", "g4dn.xlarge", "g5g.xlarge", "inf2.xlarge", "g4ad.xlarge"}

func (e *env) parameter(t *testing.T, name string) string {
	t.Helper()
	out, err := e.ssm.GetParameter(e.ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		t.Fatalf("parameter %s: %v", name, err)
	}
	return aws.ToString(out.Parameter.Value)
}

// TestEachTypeLaunchesWithItsVariant: al2023@latest and bottlerocket@latest
// resolve their accelerated variants, and each type boots the one it needs.
func TestEachTypeLaunchesWithItsVariant(t *testing.T) {
	al := func(arch, variant string) string {
		return "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/" + arch + "/" + variant + "/recommended/image_id"
	}
	br := func(arch, suffix string) string {
		return "/aws/service/bottlerocket/aws-k8s-1.37" + suffix + "/" + arch + "/latest/image_id"
	}
	tests := []struct {
		alias string
		want  map[string]string // type → SSM parameter of its image; "" = dropped
	}{
		{"al2023@latest", map[string]string{
			"m5.large": al("x86_64", "standard"), "m6g.large": al("arm64", "standard"),
			"g4dn.xlarge": al("x86_64", "nvidia"), "g5g.xlarge": al("arm64", "nvidia"),
			"inf2.xlarge": al("x86_64", "neuron"), "g4ad.xlarge": "", // an AMD GPU: no variant drives it
		}},
		{"bottlerocket@latest", map[string]string{
			"m5.large": br("x86_64", ""), "m6g.large": br("arm64", ""),
			"g4dn.xlarge": br("x86_64", "-nvidia"), "g5g.xlarge": br("arm64", "-nvidia"),
			"inf2.xlarge": "", "g4ad.xlarge": "",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.alias, func(t *testing.T) {
			e := newEnv(t, envOpts{specs: snapshotSpecs(t, variantTypes)})
			nc := defaultNodeClass()
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: tt.alias}}
			e.resyncClass(t, nc)
			wantIDs := map[string]bool{}
			for _, p := range tt.want {
				if p != "" {
					wantIDs[e.parameter(t, p)] = true
				}
			}
			if got := e.classes["default"].Status.AMIs; len(got) != len(wantIDs) {
				t.Fatalf("status.amis = %+v, want %d images", got, len(wantIDs))
			}
			for _, typ := range variantTypes {
				claim := newClaim("c-"+strings.ReplaceAll(typ, ".", "-"), reqIn(corev1.LabelInstanceTypeStable, typ))
				got, err := e.p.Create(e.ctx, claim)
				if tt.want[typ] == "" {
					if err == nil || !strings.Contains(err.Error(), "dropped "+typ+": no image in ec2nodeclass default's status.amis") {
						t.Errorf("%s: err = %v, want it dropped for want of an image", typ, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", typ, err)
				}
				want := e.parameter(t, tt.want[typ])
				id, _ := ParseProviderID(got.Status.ProviderID)
				in, _ := e.world.Instance(id)
				if in.ImageID != want || got.Status.ImageID != want {
					t.Errorf("%s: instance runs %s, claim says %s, want %s (%s)", typ, in.ImageID, got.Status.ImageID, want, tt.want[typ])
				}
			}
		})
	}
}

// TestMixedOptionsGetATemplatePerImage: a claim open to an NVIDIA and a
// Neuron type of one architecture asks CreateFleet with one launch
// template per image (one per architecture would boot one of them wrong).
func TestMixedOptionsGetATemplatePerImage(t *testing.T) {
	e := newEnv(t, envOpts{specs: snapshotSpecs(t, variantTypes)})
	nc := defaultNodeClass()
	e.resyncClass(t, nc)
	before := len(e.fleetCalls())
	e.create(newClaim("mixed", reqIn(corev1.LabelInstanceTypeStable, "g4dn.xlarge", "inf2.xlarge"),
		reqIn(nsv1.LabelCapacityType, nsv1.CapacityTypeOnDemand)))
	calls := e.fleetCalls()[before:]
	if len(calls) != 1 {
		t.Fatalf("CreateFleet calls = %d, want 1", len(calls))
	}
	byTemplate := map[string][]string{}
	for _, cfg := range calls[0].LaunchTemplateConfigs {
		for _, ov := range cfg.Overrides {
			name := aws.ToString(cfg.LaunchTemplateSpecification.LaunchTemplateName)
			byTemplate[name] = append(byTemplate[name], string(ov.InstanceType))
		}
	}
	if len(byTemplate) != 2 {
		t.Fatalf("templates = %v, want g4dn.xlarge and inf2.xlarge under separate templates", byTemplate)
	}
	for name, types := range byTemplate {
		seen := map[string]bool{}
		for _, ty := range types {
			seen[ty] = true
		}
		if len(seen) != 1 {
			t.Errorf("template %s serves %v: one image per template", name, types)
		}
	}
}

// TestBottlerocketAllocatableIsWhatTheKubeletIsTold: the allocatable the
// solver plans with for a Bottlerocket class equals the allocatable of a
// node whose kubelet runs with exactly the settings the user data carries.
func TestBottlerocketAllocatableIsWhatTheKubeletIsTold(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	tests := []struct {
		name    string
		typ     string
		kubelet *awsv1.KubeletConfiguration
	}{
		{"defaults", "m5.xlarge", nil},
		{"podsPerCore below maxPods", "m5.xlarge", &awsv1.KubeletConfiguration{MaxPods: i32(50), PodsPerCore: i32(3)}},
		{"maxPods below podsPerCore", "m5.xlarge", &awsv1.KubeletConfiguration{MaxPods: i32(9), PodsPerCore: i32(10)}},
		{"reserved and eviction", "r5.large", &awsv1.KubeletConfiguration{
			SystemReserved: map[string]string{"cpu": "150m", "memory": "300Mi", "ephemeral-storage": "2Gi"},
			KubeReserved:   map[string]string{"cpu": "90m", "memory": "600Mi"},
			EvictionHard:   map[string]string{"memory.available": "7%", "nodefs.available": "12%"},
		}},
		{"everything", "c5.xlarge", &awsv1.KubeletConfiguration{PodsPerCore: i32(4),
			SystemReserved: map[string]string{"memory": "1Gi"}, KubeReserved: map[string]string{"ephemeral-storage": "3Gi"},
			EvictionHard: map[string]string{"memory.available": "500Mi"}, ClusterDNS: []string{"10.100.0.10"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			nc := defaultNodeClass()
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
			nc.Spec.Kubelet = tt.kubelet
			e.resyncClass(t, nc)
			got := e.create(newClaim("br", reqIn(corev1.LabelInstanceTypeStable, tt.typ)))
			id, _ := ParseProviderID(got.Status.ProviderID)
			in, _ := e.world.Instance(id)
			var ud struct {
				Settings struct {
					Kubernetes struct {
						MaxPods        *int32            `toml:"max-pods"`
						SystemReserved map[string]string `toml:"system-reserved"`
						KubeReserved   map[string]string `toml:"kube-reserved"`
						EvictionHard   map[string]string `toml:"eviction-hard"`
					} `toml:"kubernetes"`
				} `toml:"settings"`
			}
			if _, err := toml.Decode(in.UserData, &ud); err != nil {
				t.Fatalf("user data: %v\n%s", err, in.UserData)
			}
			k := ud.Settings.Kubernetes
			if k.MaxPods == nil {
				t.Fatalf("no max-pods in the user data:\n%s", in.UserData)
			}
			// The kubelet as the TOML configures it: no podsPerCore (Bottlerocket has none).
			told, err := catalog.KubeletSettingsFrom(&awsv1.KubeletConfiguration{MaxPods: k.MaxPods,
				SystemReserved: k.SystemReserved, KubeReserved: k.KubeReserved, EvictionHard: k.EvictionHard})
			if err != nil {
				t.Fatal(err)
			}
			opts := e.p.opts.Catalog
			opts.Kubelet, opts.EphemeralStorage = told, rootVolumeSize(nc, userdata.FamilyBottlerocket)
			node, ok := catalog.FromSpecs(snapshotSpecs(t, []string{tt.typ}), opts).Get(tt.typ)
			if !ok {
				t.Fatalf("%s not in the catalog", tt.typ)
			}
			want := node.Allocatable()
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
				g, w := got.Status.Allocatable[r], want[r]
				if g.Cmp(w) != 0 {
					t.Errorf("%s: the solver plans %s, the kubelet the user data configures gives %s\n%s", r, g.String(), w.String(), in.UserData)
				}
			}
		})
	}
}

// TestSolverSeesOnlyTypesAnImageBoots: GetInstanceTypes leaves out the types
// Create would drop, so the solver never plans them.
func TestSolverSeesOnlyTypesAnImageBoots(t *testing.T) {
	e := newEnv(t, envOpts{specs: snapshotSpecs(t, variantTypes)})
	nc := defaultNodeClass()
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
	e.resyncClass(t, nc)
	types, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range types {
		got = append(got, it.Name)
	}
	slices.Sort(got)
	// Bottlerocket has no Neuron variant, and no variant drives an AMD GPU.
	if want := []string{"g4dn.xlarge", "g5g.xlarge", "m5.large", "m6g.large"}; !slices.Equal(got, want) {
		t.Errorf("types = %v, want %v", got, want)
	}
}
