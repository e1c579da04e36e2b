package catalog

import (
	"reflect"
	"sort"
	"testing"
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
