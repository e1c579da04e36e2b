package catalog

import (
	"reflect"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestLoad(t *testing.T) {
	specs, err := Specs()
	if err != nil {
		t.Fatal(err)
	}
	c := mustLoad(t, Options{})
	types := c.Types()
	if len(types)+len(c.Skipped()) != len(specs) {
		t.Errorf("%d types + %d skipped != %d snapshot records", len(types), len(c.Skipped()), len(specs))
	}
	if len(types) < 1200 {
		t.Errorf("only %d types loaded", len(types))
	}
	if !sort.SliceIsSorted(types, func(i, j int) bool { return types[i].Name < types[j].Name }) {
		t.Error("Types() is not ordered by name")
	}
	for _, it := range types {
		if got, ok := c.Get(it.Name); !ok || got != it {
			t.Errorf("Get(%q) does not return the listed type", it.Name)
		}
		if len(it.Offerings) == 0 {
			t.Errorf("%s has no offerings", it.Name)
		}
		if it.Arch != "amd64" && it.Arch != "arm64" {
			t.Errorf("%s: arch %q", it.Name, it.Arch)
		}
	}
	if _, ok := c.Get("no-such.type"); ok {
		t.Error("Get found a type that does not exist")
	}
	if c.Region() != DefaultRegion || !reflect.DeepEqual(c.Zones(), DefaultZones) {
		t.Errorf("region %q zones %v, want the defaults", c.Region(), c.Zones())
	}
	// Types() hands out a fresh slice: reordering it leaves the catalog alone.
	types[0], types[1] = types[1], types[0]
	if c.Types()[0] == types[0] {
		t.Error("Types() shares its slice with the catalog")
	}
}

func TestSkipped(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		reason string // "" means loaded
	}{
		// The snapshot has only size and price for p3.2xlarge: no
		// architecture and no GPU facts, so no node could be labelled.
		{"p3.2xlarge", Options{}, SkipIncomplete},
		{"a1.2xlarge", Options{}, SkipPreviousGeneration},
		{"a1.2xlarge", Options{IncludePreviousGeneration: true}, ""},
		{"hpc6a.48xlarge", Options{}, SkipNotOffered},
		{"m5.large", Options{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.opts)
			_, loaded := c.Get(tt.name)
			reason := c.Skipped()[tt.name]
			if reason != tt.reason || loaded != (tt.reason == "") {
				t.Errorf("loaded=%v reason=%q, want reason %q", loaded, reason, tt.reason)
			}
		})
	}
}

func TestLoadIsDeterministic(t *testing.T) {
	a, b := mustLoad(t, Options{}), mustLoad(t, Options{})
	at, bt := a.Types(), b.Types()
	if len(at) != len(bt) {
		t.Fatalf("%d vs %d types", len(at), len(bt))
	}
	for i := range at {
		if at[i].Name != bt[i].Name || !reflect.DeepEqual(at[i].Offerings, bt[i].Offerings) ||
			!reflect.DeepEqual(at[i].Labels, bt[i].Labels) {
			t.Fatalf("type %d differs between loads: %s vs %s", i, at[i].Name, bt[i].Name)
		}
	}
}

func TestLoadWithRegionAndZones(t *testing.T) {
	c := mustLoad(t, Options{Region: "eu-west-1", Zones: []string{"eu-west-1a", "eu-west-1b"}})
	it, _ := c.Get("m5.large")
	if it.Labels["topology.kubernetes.io/region"] != "eu-west-1" {
		t.Errorf("region label %q", it.Labels["topology.kubernetes.io/region"])
	}
	for _, o := range it.Offerings {
		if o.Zone != "eu-west-1a" && o.Zone != "eu-west-1b" {
			t.Errorf("offering in %s, outside the configured zones", o.Zone)
		}
	}
}

// Specs hands out its own slice: editing it leaves later loads alone.
func TestSpecsAreCopies(t *testing.T) {
	a, err := Specs()
	if err != nil {
		t.Fatal(err)
	}
	name := a[0].Name
	a[0].Name = "changed"
	b, _ := Specs()
	if b[0].Name != name {
		t.Errorf("Specs() shares its records: got %q", b[0].Name)
	}
}

func TestParseSpecsErrors(t *testing.T) {
	for name, raw := range map[string]string{
		"not json":     "{",
		"not a list":   `{"name": "x"}`,
		"nameless row": `[{"vcpus": 2}]`,
	} {
		if _, err := parseSpecs([]byte(raw)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Every catalog type can hold a pod: cpu, memory and pods left after
// overhead, and never more allocatable than capacity.
func TestAllocatableInvariants(t *testing.T) {
	for _, it := range mustLoad(t, Options{IncludePreviousGeneration: true}).Types() {
		alloc := it.Allocatable()
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
			a, c := alloc[r], it.Capacity[r]
			if a.Sign() <= 0 {
				t.Errorf("%s: allocatable %s = %s", it.Name, r, a.String())
			}
			if a.Cmp(c) > 0 {
				t.Errorf("%s: allocatable %s %s > capacity %s", it.Name, r, a.String(), c.String())
			}
		}
		if len(alloc) != len(it.Capacity) {
			t.Errorf("%s: allocatable has %d resources, capacity %d", it.Name, len(alloc), len(it.Capacity))
		}
	}
}

// A type built by hand (as tests elsewhere do) computes allocatable from its fields.
func TestAllocatableOfHandBuiltType(t *testing.T) {
	it := &InstanceType{
		Name:     "hand.made",
		Capacity: corev1.ResourceList{corev1.ResourceCPU: mustQ("4"), corev1.ResourceMemory: mustQ("8Gi")},
		Overhead: Overhead{
			KubeReserved:      corev1.ResourceList{corev1.ResourceCPU: mustQ("100m")},
			SystemReserved:    corev1.ResourceList{corev1.ResourceCPU: mustQ("100m"), corev1.ResourceMemory: mustQ("1Gi")},
			EvictionThreshold: corev1.ResourceList{corev1.ResourceMemory: mustQ("1Gi")},
		},
	}
	alloc := it.Allocatable()
	if got := milli(alloc, corev1.ResourceCPU); got != 3800 {
		t.Errorf("cpu %dm, want 3800m", got)
	}
	if got := mib(alloc, corev1.ResourceMemory); got != 6*1024 {
		t.Errorf("memory %d MiB, want 6144", got)
	}
}

func TestWithOfferingsCopies(t *testing.T) {
	c := mustLoad(t, Options{})
	it, _ := c.Get("m5.large")
	offs := Offerings{{Zone: "z", CapacityType: "spot", Price: 9, Available: true}}
	cp := it.WithOfferings(offs)
	offs[0].Price = 1
	if cp.Offerings[0].Price != 9 || len(it.Offerings) == 1 || cp.Name != it.Name {
		t.Errorf("WithOfferings: copy %+v, original %d offerings", cp.Offerings, len(it.Offerings))
	}
}
