package catalog

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func TestLabels(t *testing.T) {
	tests := []struct {
		name string
		want map[string]string
	}{
		{"c6g.xlarge", map[string]string{
			corev1.LabelArchStable:              "arm64",
			corev1.LabelOSStable:                "linux",
			corev1.LabelInstanceTypeStable:      "c6g.xlarge",
			corev1.LabelTopologyRegion:          "us-east-1",
			awsv1.LabelInstanceCategory:         "c",
			awsv1.LabelInstanceFamily:           "c6g",
			awsv1.LabelInstanceGeneration:       "6",
			awsv1.LabelInstanceSize:             "xlarge",
			awsv1.LabelInstanceCPU:              "4",
			awsv1.LabelInstanceMemory:           "8192",
			awsv1.LabelInstanceHypervisor:       "nitro",
			awsv1.LabelInstanceLocalNVMe:        "0",
			awsv1.LabelInstanceNetworkBandwidth: "1250",
			awsv1.LabelSpotInterruptionBucket:   "5-10",
		}},
		{"m5.large", map[string]string{
			corev1.LabelArchStable:              "amd64",
			corev1.LabelOSStable:                "linux",
			corev1.LabelInstanceTypeStable:      "m5.large",
			corev1.LabelTopologyRegion:          "us-east-1",
			awsv1.LabelInstanceCategory:         "m",
			awsv1.LabelInstanceFamily:           "m5",
			awsv1.LabelInstanceGeneration:       "5",
			awsv1.LabelInstanceSize:             "large",
			awsv1.LabelInstanceCPU:              "2",
			awsv1.LabelInstanceMemory:           "8192",
			awsv1.LabelInstanceHypervisor:       "nitro",
			awsv1.LabelInstanceLocalNVMe:        "0",
			awsv1.LabelInstanceNetworkBandwidth: "750",
			awsv1.LabelSpotInterruptionBucket:   "15-20",
		}},
		// The snapshot has no GPU facts for p3.2xlarge (see TestIncompleteSpecsAreSkipped);
		// p3dn.24xlarge is the V100 type it does describe.
		{"p3dn.24xlarge", map[string]string{
			corev1.LabelArchStable:              "amd64",
			corev1.LabelOSStable:                "linux",
			corev1.LabelInstanceTypeStable:      "p3dn.24xlarge",
			corev1.LabelTopologyRegion:          "us-east-1",
			awsv1.LabelInstanceCategory:         "p",
			awsv1.LabelInstanceFamily:           "p3dn",
			awsv1.LabelInstanceGeneration:       "3",
			awsv1.LabelInstanceSize:             "24xlarge",
			awsv1.LabelInstanceCPU:              "96",
			awsv1.LabelInstanceMemory:           "786432",
			awsv1.LabelInstanceGPUCount:         "8",
			awsv1.LabelInstanceGPUName:          "v100",
			awsv1.LabelInstanceGPUManufacturer:  "nvidia",
			awsv1.LabelInstanceHypervisor:       "nitro",
			awsv1.LabelInstanceLocalNVMe:        "1800",
			awsv1.LabelInstanceNetworkBandwidth: "100000",
			awsv1.LabelSpotInterruptionBucket:   "20-100",
		}},
		// Accelerator labels exist only on accelerator types; no GPU labels here.
		{"inf2.xlarge", map[string]string{
			corev1.LabelArchStable:                     "amd64",
			corev1.LabelOSStable:                       "linux",
			corev1.LabelInstanceTypeStable:             "inf2.xlarge",
			corev1.LabelTopologyRegion:                 "us-east-1",
			awsv1.LabelInstanceCategory:                "inf",
			awsv1.LabelInstanceFamily:                  "inf2",
			awsv1.LabelInstanceGeneration:              "2",
			awsv1.LabelInstanceSize:                    "xlarge",
			awsv1.LabelInstanceCPU:                     "4",
			awsv1.LabelInstanceMemory:                  "16384",
			awsv1.LabelInstanceAcceleratorCount:        "1",
			awsv1.LabelInstanceAcceleratorName:         "inferentia2",
			awsv1.LabelInstanceAcceleratorManufacturer: "aws",
			awsv1.LabelInstanceHypervisor:              "nitro",
			awsv1.LabelInstanceLocalNVMe:               "0",
			awsv1.LabelInstanceNetworkBandwidth:        "2083",
			awsv1.LabelSpotInterruptionBucket:          "0-5",
		}},
		// Bare metal has no hypervisor: the label is left out, not empty.
		{"m6g.metal", map[string]string{
			corev1.LabelArchStable:              "arm64",
			corev1.LabelOSStable:                "linux",
			corev1.LabelInstanceTypeStable:      "m6g.metal",
			corev1.LabelTopologyRegion:          "us-east-1",
			awsv1.LabelInstanceCategory:         "m",
			awsv1.LabelInstanceFamily:           "m6g",
			awsv1.LabelInstanceGeneration:       "6",
			awsv1.LabelInstanceSize:             "metal",
			awsv1.LabelInstanceCPU:              "64",
			awsv1.LabelInstanceMemory:           "262144",
			awsv1.LabelInstanceLocalNVMe:        "0",
			awsv1.LabelInstanceNetworkBandwidth: "25000",
			awsv1.LabelSpotInterruptionBucket:   "15-20",
		}},
	}
	c := mustLoad(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, ok := c.Get(tt.name)
			if !ok {
				t.Fatalf("%s not in the catalog", tt.name)
			}
			if !maps.Equal(it.Labels, tt.want) {
				t.Errorf("labels:\n got %v\nwant %v", it.Labels, tt.want)
			}
		})
	}
}

func TestExtendedResources(t *testing.T) {
	tests := []struct {
		name     string
		resource corev1.ResourceName
		want     int64
	}{
		{"p3dn.24xlarge", ResourceNVIDIAGPU, 8},
		{"g4dn.xlarge", ResourceNVIDIAGPU, 1},
		{"g4ad.16xlarge", ResourceAMDGPU, 4},
		{"inf2.48xlarge", ResourceAWSNeuron, 12},
		{"trn1.32xlarge", ResourceAWSNeuron, 16},
	}
	c := mustLoad(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, ok := c.Get(tt.name)
			if !ok {
				t.Fatalf("%s not in the catalog", tt.name)
			}
			if got := value(it.Capacity, tt.resource); got != tt.want {
				t.Errorf("capacity %s = %d, want %d", tt.resource, got, tt.want)
			}
			// Nothing reserves devices: all of them are allocatable.
			if got := value(it.Allocatable(), tt.resource); got != tt.want {
				t.Errorf("allocatable %s = %d, want %d", tt.resource, got, tt.want)
			}
		})
	}
	// A type without devices has no device resources at all.
	m5, _ := c.Get("m5.large")
	for _, r := range []corev1.ResourceName{ResourceNVIDIAGPU, ResourceAMDGPU, ResourceAWSNeuron} {
		if _, ok := m5.Capacity[r]; ok {
			t.Errorf("m5.large has %s capacity", r)
		}
	}
}

func TestLabelsFor(t *testing.T) {
	c := mustLoad(t, Options{})
	it, _ := c.Get("c6g.xlarge")
	o := it.Offerings[0]
	got := it.LabelsFor(o)
	if got[corev1.LabelTopologyZone] != o.Zone || got[nsv1.LabelCapacityType] != o.CapacityType {
		t.Errorf("LabelsFor(%+v) zone/capacity-type = %q/%q", o, got[corev1.LabelTopologyZone], got[nsv1.LabelCapacityType])
	}
	if len(got) != len(it.Labels)+2 {
		t.Errorf("LabelsFor has %d labels, want the %d type labels + 2", len(got), len(it.Labels))
	}
	got["x"] = "y"
	if _, ok := it.Labels["x"]; ok {
		t.Error("LabelsFor returned the type's own map")
	}
}

// Every label of every catalog type must be something the API server accepts.
func TestAllLabelsAreValid(t *testing.T) {
	check := func(it *InstanceType, labels map[string]string) {
		for k, v := range labels {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				t.Errorf("%s: key %q: %v", it.Name, k, errs)
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 || v == "" {
				t.Errorf("%s: %s=%q: %v", it.Name, k, v, errs)
			}
		}
	}
	for _, it := range mustLoad(t, Options{IncludePreviousGeneration: true}).Types() {
		check(it, it.Labels)
		// Offerings add only zone and capacity type; check those per offering.
		for _, o := range it.Offerings {
			all := it.LabelsFor(o)
			check(it, map[string]string{
				corev1.LabelTopologyZone: all[corev1.LabelTopologyZone],
				nsv1.LabelCapacityType:   all[nsv1.LabelCapacityType],
			})
		}
	}
}

func TestSpotInterruptionBucketValue(t *testing.T) {
	for i, want := range []string{"0-5", "5-10", "10-15", "15-20", "20-100", ""} {
		if got := SpotInterruptionBucketValue(i); got != want {
			t.Errorf("SpotInterruptionBucketValue(%d) = %q, want %q", i, got, want)
		}
	}
	if got := SpotInterruptionBucketValue(-1); got != "" {
		t.Errorf("SpotInterruptionBucketValue(-1) = %q", got)
	}
}

func mustLoad(t testing.TB, opts Options) *Catalog {
	t.Helper()
	c, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
