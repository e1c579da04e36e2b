package plan

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

func spec(name string, vcpu int, memGiB int64, od, spot float64) catalog.Spec {
	return catalog.Spec{Name: name, Family: name[:2], Category: name[:1], Generation: 5, Size: "large", Architecture: "x86_64",
		VCPUs: vcpu, MemoryMiB: memGiB * 1024, MaxENIs: 3, IPv4PerENI: 10, OfferedInRegion: true,
		SupportedUsageClasses: []string{"on-demand", "spot"}, OnDemandPrice: od, SpotPrice: spot}
}

func itype(s catalog.Spec, offs ...catalog.Offering) *catalog.InstanceType {
	return catalog.NewInstanceType(s, offs, catalog.Options{Zones: []string{"z1", "z2"}})
}

func off(zone, ct string, price float64) catalog.Offering {
	return catalog.Offering{Zone: zone, CapacityType: ct, Price: price, Available: true}
}

func ice(o catalog.Offering) catalog.Offering { o.Available = false; return o }

func rated(o catalog.Offering, risk float64) catalog.Offering { o.InterruptionRisk = risk; return o }

const (
	spot = nsv1.CapacityTypeSpot
	od   = nsv1.CapacityTypeOnDemand
)

func req(key string, op corev1.NodeSelectorOperator, vals ...string) nsv1.NodeSelectorRequirementWithMinValues {
	return nsv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: vals}
}

var subnets = []Subnet{{ID: "subnet-a", Zone: "z1", FreeIPs: 10}, {ID: "subnet-b", Zone: "z1", FreeIPs: 500}, {ID: "subnet-c", Zone: "z2", FreeIPs: 5}}

func TestMake(t *testing.T) {
	m5 := spec("m5.large", 2, 8, 0.096, 0.035)
	c5 := spec("c5.large", 2, 4, 0.085, 0.032)
	r5 := spec("r5.large", 2, 16, 0.126, 0.2) // spot dearer than the cheapest on-demand
	gpu := spec("g4dn.xlarge", 4, 16, 0.526, 0.2)
	gpu.GPUCount, gpu.GPUName = 1, "t4"
	tests := []struct {
		name     string
		in       Input
		wantCT   string
		want     []string // type/zone/subnet in order
		wantNote bool
		wantErr  error
	}{
		{
			name: "spot preferred, cheapest first, best subnet per zone",
			in: Input{InstanceTypes: []*catalog.InstanceType{
				itype(m5, off("z1", spot, 0.035), off("z2", spot, 0.036), off("z1", od, 0.096)),
				itype(c5, off("z1", spot, 0.032), off("z1", od, 0.085)),
			}, Subnets: subnets},
			wantCT: spot, want: []string{"c5.large/z1/subnet-b", "m5.large/z1/subnet-b", "m5.large/z2/subnet-c"},
		},
		{
			name: "rated spot offerings in order of risk-weighted price: a calm pool before a cheaper, often reclaimed one",
			in: Input{InstanceTypes: []*catalog.InstanceType{
				itype(m5, rated(off("z1", spot, 0.035), 2.5), rated(off("z2", spot, 0.036), 12.5), off("z1", od, 0.096)),
				itype(c5, rated(off("z1", spot, 0.032), 25), off("z1", od, 0.085)),
			}, Subnets: subnets},
			wantCT: spot, want: []string{"m5.large/z1/subnet-b", "m5.large/z2/subnet-c", "c5.large/z1/subnet-b"},
		},
		{
			name: "spot above the risk ceiling arrives unavailable and leaves on-demand",
			in: Input{InstanceTypes: catalog.WithSpotRisk([]*catalog.InstanceType{
				itype(c5, off("z1", spot, 0.032), off("z1", od, 0.085)),
			}, nil, ptr.To[int32](10)), Subnets: subnets},
			wantCT: od, want: []string{"c5.large/z1/subnet-b"}, wantNote: true,
		},
		{
			name: "ICE-marked spot offerings fall back to on-demand with a note",
			in: Input{InstanceTypes: []*catalog.InstanceType{
				itype(m5, ice(off("z1", spot, 0.035)), off("z1", od, 0.096)),
			}, Subnets: subnets},
			wantCT: od, want: []string{"m5.large/z1/subnet-b"}, wantNote: true,
		},
		{
			name: "avoid spot takes on-demand when it exists",
			in: Input{AvoidSpot: true, InstanceTypes: []*catalog.InstanceType{
				itype(m5, off("z1", spot, 0.035), off("z1", od, 0.096)),
			}, Subnets: subnets},
			wantCT: od, want: []string{"m5.large/z1/subnet-b"}, wantNote: true,
		},
		{
			name: "avoid spot keeps spot when on-demand has nothing",
			in: Input{AvoidSpot: true, InstanceTypes: []*catalog.InstanceType{
				itype(m5, off("z1", spot, 0.035)),
			}, Subnets: subnets},
			wantCT: spot, want: []string{"m5.large/z1/subnet-b"},
		},
		{
			name: "capacity-type requirement on-demand",
			in: Input{Requirements: []nsv1.NodeSelectorRequirementWithMinValues{req(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, od)},
				InstanceTypes: []*catalog.InstanceType{itype(m5, off("z1", spot, 0.035), off("z1", od, 0.096))}, Subnets: subnets},
			wantCT: od, want: []string{"m5.large/z1/subnet-b"},
		},
		{
			name: "spot dearer than cheapest on-demand is dropped",
			in: Input{InstanceTypes: []*catalog.InstanceType{
				itype(r5, off("z1", spot, 0.2), off("z1", od, 0.126)),
			}, Subnets: subnets},
			wantCT: od, want: []string{"r5.large/z1/subnet-b"}, wantNote: true,
		},
		{
			name: "zone without subnet is skipped",
			in: Input{InstanceTypes: []*catalog.InstanceType{itype(m5, off("z3", spot, 0.01), off("z1", spot, 0.035), off("z1", od, 0.096))},
				Subnets: subnets},
			wantCT: spot, want: []string{"m5.large/z1/subnet-b"},
		},
		{
			name: "exotic types dropped when others exist",
			in: Input{InstanceTypes: []*catalog.InstanceType{
				itype(gpu, off("z1", spot, 0.03), off("z1", od, 0.526)),
				itype(m5, off("z1", spot, 0.035), off("z1", od, 0.096)),
			}, Subnets: subnets},
			wantCT: spot, want: []string{"m5.large/z1/subnet-b"},
		},
		{
			name: "exotic types kept when requested",
			in: Input{Requirements: []nsv1.NodeSelectorRequirementWithMinValues{req("aws.nodesmith.sh/instance-gpu-count", nsv1.NodeSelectorOpGte, "1")},
				InstanceTypes: []*catalog.InstanceType{
					itype(gpu, off("z1", spot, 0.2), off("z1", od, 0.526)),
					itype(m5, off("z1", spot, 0.035), off("z1", od, 0.096)),
				}, Subnets: subnets},
			wantCT: spot, want: []string{"g4dn.xlarge/z1/subnet-b"},
		},
		{
			name: "instance-type In and zone requirement, unknown keys ignored",
			in: Input{Requirements: []nsv1.NodeSelectorRequirementWithMinValues{
				req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"),
				req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "z2"),
				req("team", corev1.NodeSelectorOpIn, "a"),
			}, InstanceTypes: []*catalog.InstanceType{
				itype(m5, off("z1", spot, 0.035), off("z2", spot, 0.036), off("z2", od, 0.096)),
				itype(c5, off("z2", spot, 0.032), off("z2", od, 0.085)),
			}, Subnets: subnets},
			wantCT: spot, want: []string{"m5.large/z2/subnet-c"},
		},
		{
			name: "requests exclude small types",
			in: Input{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("6Gi")},
				InstanceTypes: []*catalog.InstanceType{
					itype(m5, off("z1", spot, 0.035), off("z1", od, 0.096)),
					itype(c5, off("z1", spot, 0.032), off("z1", od, 0.085)),
				}, Subnets: subnets},
			wantCT: spot, want: []string{"m5.large/z1/subnet-b"},
		},
		{
			name: "minValues met",
			in: Input{Requirements: []nsv1.NodeSelectorRequirementWithMinValues{minValues(corev1.LabelInstanceTypeStable, 2, "m5.large", "c5.large")},
				InstanceTypes: []*catalog.InstanceType{
					itype(m5, off("z1", spot, 0.035)),
					itype(c5, off("z1", spot, 0.032)),
				}, Subnets: subnets},
			wantCT: spot, want: []string{"c5.large/z1/subnet-b", "m5.large/z1/subnet-b"},
		},
		{
			name: "minValues not met after filters",
			in: Input{Requirements: []nsv1.NodeSelectorRequirementWithMinValues{minValues(corev1.LabelInstanceTypeStable, 2, "m5.large", "c5.large")},
				InstanceTypes: []*catalog.InstanceType{
					itype(m5, off("z1", spot, 0.035)),
					itype(c5, ice(off("z1", spot, 0.032))),
				}, Subnets: subnets},
			wantErr: ErrNoOptions,
		},
		{
			name:    "nothing fits",
			in:      Input{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}, InstanceTypes: []*catalog.InstanceType{itype(m5, off("z1", od, 0.096))}, Subnets: subnets},
			wantErr: ErrNoOptions,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Make(tt.in)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.CapacityType != tt.wantCT {
				t.Errorf("capacity type = %s, want %s", p.CapacityType, tt.wantCT)
			}
			var got []string
			for _, o := range p.Options {
				got = append(got, fmt.Sprintf("%s/%s/%s", o.InstanceType.Name, o.Zone, o.SubnetID))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("options = %v, want %v", got, tt.want)
			}
			if (p.Note != "") != tt.wantNote {
				t.Errorf("note = %q, want note: %v", p.Note, tt.wantNote)
			}
		})
	}
}

func TestMakeTruncatesByPrice(t *testing.T) {
	var types []*catalog.InstanceType
	for i := 0; i < 40; i++ {
		s := spec(fmt.Sprintf("m5.x%02d", i), 2, 8, 1, 0.5)
		// Descending prices so the cheapest are the last ones built.
		types = append(types, itype(s, off("z1", spot, float64(100-i)/100), off("z2", spot, float64(100-i)/100+0.001), off("z1", od, 2)))
	}
	p, err := Make(Input{InstanceTypes: types, Subnets: subnets})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Options) != DefaultMaxOptions {
		t.Fatalf("options = %d, want %d", len(p.Options), DefaultMaxOptions)
	}
	for i := 1; i < len(p.Options); i++ {
		if p.Options[i].Price < p.Options[i-1].Price {
			t.Fatalf("option %d price %v below previous %v", i, p.Options[i].Price, p.Options[i-1].Price)
		}
	}
	if p.Options[0].InstanceType.Name != "m5.x39" {
		t.Errorf("cheapest = %s, want m5.x39", p.Options[0].InstanceType.Name)
	}
}

func TestMatcher(t *testing.T) {
	labels := map[string]string{"cpu": "4", "arch": "amd64"}
	defined := map[string]bool{"cpu": true, "arch": true, "gpu": true}
	tests := []struct {
		name string
		r    nsv1.NodeSelectorRequirementWithMinValues
		want bool
	}{
		{"in", req("arch", corev1.NodeSelectorOpIn, "amd64"), true},
		{"in miss", req("arch", corev1.NodeSelectorOpIn, "arm64"), false},
		{"notin", req("arch", corev1.NodeSelectorOpNotIn, "arm64"), true},
		{"exists", req("cpu", corev1.NodeSelectorOpExists), true},
		{"exists missing", req("gpu", corev1.NodeSelectorOpExists), false},
		{"doesnotexist", req("gpu", corev1.NodeSelectorOpDoesNotExist), true},
		{"gt", req("cpu", corev1.NodeSelectorOpGt, "3"), true},
		{"gt equal", req("cpu", corev1.NodeSelectorOpGt, "4"), false},
		{"gte equal", req("cpu", nsv1.NodeSelectorOpGte, "4"), true},
		{"gte above", req("cpu", nsv1.NodeSelectorOpGte, "5"), false},
		{"lte equal", req("cpu", nsv1.NodeSelectorOpLte, "4"), true},
		{"lt equal", req("cpu", corev1.NodeSelectorOpLt, "4"), false},
		{"undefined key ignored", req("team", corev1.NodeSelectorOpIn, "a"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewMatcher([]nsv1.NodeSelectorRequirementWithMinValues{tt.r})
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Matches(labels, defined); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := NewMatcher([]nsv1.NodeSelectorRequirementWithMinValues{req("cpu", nsv1.NodeSelectorOpGte, "x")}); err == nil {
		t.Error("want an error for a non-integer Gte")
	}
}

func minValues(key string, n int, vals ...string) nsv1.NodeSelectorRequirementWithMinValues {
	r := req(key, corev1.NodeSelectorOpIn, vals...)
	r.MinValues = &n
	return r
}
