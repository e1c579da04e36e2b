package catalog

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/apis/v1alpha1"
)

func TestApplyOverlays(t *testing.T) {
	m5 := &InstanceType{Name: "m5.xlarge", Labels: map[string]string{corev1.LabelInstanceTypeStable: "m5.xlarge", "family": "m5"},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
		Offerings: Offerings{
			{Zone: "a", CapacityType: nsv1.CapacityTypeOnDemand, Price: 0.2, Available: true},
			{Zone: "a", CapacityType: nsv1.CapacityTypeSpot, Price: 0.08, Available: true},
			{Zone: "a", CapacityType: nsv1.CapacityTypeReserved, Price: 0, Available: true},
		}}
	c6g := &InstanceType{Name: "c6g.large", Labels: map[string]string{corev1.LabelInstanceTypeStable: "c6g.large", "family": "c6g"},
		Offerings: Offerings{{Zone: "a", CapacityType: nsv1.CapacityTypeOnDemand, Price: 0.1, Available: true}}}
	f := func(v float64) *float64 { return &v }
	adj := func(s string) *PriceAdjustment {
		a, err := ParsePriceAdjustment(s)
		if err != nil {
			t.Fatal(err)
		}
		return &a
	}
	in := func(k string, v ...string) []nsv1.NodeSelectorRequirementWithMinValues {
		return []nsv1.NodeSelectorRequirementWithMinValues{{Key: k, Operator: corev1.NodeSelectorOpIn, Values: v}}
	}
	od := in(nsv1.LabelCapacityType, nsv1.CapacityTypeOnDemand)
	tests := []struct {
		name     string
		overlays []Overlay
		// want: every offering as "type/ct=price(by)", then added capacity.
		want      string
		conflicts map[string][]string
	}{
		{"none", nil, "m5.xlarge/on-demand=0.2000() m5.xlarge/spot=0.0800() m5.xlarge/reserved=0.0000() c6g.large/on-demand=0.1000()", nil},
		{"percentage on on-demand only", []Overlay{{Name: "sp", Requirements: od, Adjustment: adj("-10%")}},
			"m5.xlarge/on-demand=0.1800(sp) m5.xlarge/spot=0.0800() m5.xlarge/reserved=0.0000() c6g.large/on-demand=0.0900(sp)", nil},
		{"absolute price for one family, reserved untouched", []Overlay{{Name: "lic", Requirements: in("family", "m5"), Adjustment: adj("+0.1")}},
			"m5.xlarge/on-demand=0.3000(lic) m5.xlarge/spot=0.1800(lic) m5.xlarge/reserved=0.0000() c6g.large/on-demand=0.1000()", nil},
		{"never below zero", []Overlay{{Name: "big", Adjustment: adj("-5")}},
			"m5.xlarge/on-demand=0.0000(big) m5.xlarge/spot=0.0000(big) m5.xlarge/reserved=0.0000() c6g.large/on-demand=0.0000(big)", nil},
		{"price replaces", []Overlay{{Name: "fixed", Requirements: in(corev1.LabelInstanceTypeStable, "c6g.large"), Price: f(0.5)}},
			"m5.xlarge/on-demand=0.2000() m5.xlarge/spot=0.0800() m5.xlarge/reserved=0.0000() c6g.large/on-demand=0.5000(fixed)", nil},
		{"heavier wins", []Overlay{{Name: "a-light", Weight: 1, Adjustment: adj("+1")}, {Name: "z-heavy", Weight: 5, Requirements: od, Adjustment: adj("-50%")}},
			"m5.xlarge/on-demand=0.1000(z-heavy) m5.xlarge/spot=1.0800(a-light) m5.xlarge/reserved=0.0000() c6g.large/on-demand=0.0500(z-heavy)", nil},
		{"equal weight: alphabetically first wins, both conflict", []Overlay{{Name: "b", Weight: 3, Price: f(1)}, {Name: "a", Weight: 3, Requirements: od, Price: f(2)}},
			"m5.xlarge/on-demand=2.0000(a) m5.xlarge/spot=1.0000(b) m5.xlarge/reserved=0.0000() c6g.large/on-demand=2.0000(a)", map[string][]string{"a": {"b"}, "b": {"a"}}},
		{"capacity merged, heavier decides a shared resource", []Overlay{
			{Name: "hp", Weight: 1, Requirements: in("family", "m5"), Capacity: corev1.ResourceList{"hugepages-2Mi": resource.MustParse("1Gi"), "example.com/gpu-slice": resource.MustParse("2")}},
			{Name: "slices", Weight: 2, Requirements: in("family", "m5"), Capacity: corev1.ResourceList{"example.com/gpu-slice": resource.MustParse("4")}},
		}, "m5.xlarge/on-demand=0.2000() m5.xlarge/spot=0.0800() m5.xlarge/reserved=0.0000() c6g.large/on-demand=0.1000() +m5.xlarge:example.com/gpu-slice=4,hugepages-2Mi=1Gi", nil},
		{"capacity tie conflicts", []Overlay{
			{Name: "x", Capacity: corev1.ResourceList{"example.com/r": resource.MustParse("1")}},
			{Name: "y", Capacity: corev1.ResourceList{"example.com/r": resource.MustParse("2")}},
		}, "m5.xlarge/on-demand=0.2000() m5.xlarge/spot=0.0800() m5.xlarge/reserved=0.0000() c6g.large/on-demand=0.1000() +m5.xlarge:example.com/r=1 +c6g.large:example.com/r=1", map[string][]string{"x": {"y"}, "y": {"x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			types := []*InstanceType{m5, c6g}
			out, res := ApplyOverlays(types, tt.overlays)
			var got []string
			for _, it := range out {
				for _, o := range it.Offerings {
					got = append(got, fmt.Sprintf("%s/%s=%.4f(%s)", it.Name, o.CapacityType, o.Price, o.PricedBy))
				}
			}
			for _, it := range out {
				var add []string
				for name, q := range it.Capacity {
					if name != corev1.ResourceCPU {
						add = append(add, fmt.Sprintf("%s=%s", name, q.String()))
					}
				}
				if len(add) > 0 {
					sortStrings(add)
					got = append(got, "+"+it.Name+":"+strings.Join(add, ","))
				}
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("got  %s\nwant %s", g, tt.want)
			}
			if len(res.Conflicts) != len(tt.conflicts) || (len(tt.conflicts) > 0 && !reflect.DeepEqual(res.Conflicts, tt.conflicts)) {
				t.Errorf("conflicts %v, want %v", res.Conflicts, tt.conflicts)
			}
			if m5.Offerings[0].Price != 0.2 || len(m5.Capacity) != 1 {
				t.Errorf("the shared type was changed: %+v", m5)
			}
		})
	}
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestOverlayFrom(t *testing.T) {
	s := func(v string) *string { return &v }
	tests := []struct {
		name    string
		spec    v1alpha1.NodeOverlaySpec
		wantErr string
	}{
		{"percentage", v1alpha1.NodeOverlaySpec{PriceAdjustment: s("-10%")}, ""},
		{"absolute", v1alpha1.NodeOverlaySpec{PriceAdjustment: s("+0.05")}, ""},
		{"unsigned adjustment refused", v1alpha1.NodeOverlaySpec{PriceAdjustment: s("10%")}, `"10%"`},
		{"garbage refused", v1alpha1.NodeOverlaySpec{PriceAdjustment: s("-ten")}, `"-ten"`},
		{"negative price refused", v1alpha1.NodeOverlaySpec{Price: s("-1")}, `"-1"`},
		{"both refused", v1alpha1.NodeOverlaySpec{Price: s("1"), PriceAdjustment: s("+1")}, "exclusive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := OverlayFrom(&v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "o"}, Spec: tt.spec})
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
}
