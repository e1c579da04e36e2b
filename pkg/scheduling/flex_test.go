package scheduling

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

const familyKey = "test/family"

// familyType is a spot-only type of family fam with cpu vCPUs (4 GiB
// each) offered in zones; bigger sizes are a little cheaper per vCPU, so
// the solver prefers them when nothing caps it.
func familyType(fam string, cpu int64, zones ...string) *catalog.InstanceType {
	name := fmt.Sprintf("%s.%dx", fam, cpu)
	it := &catalog.InstanceType{
		Name:   name,
		Labels: map[string]string{corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", familyKey: fam},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(4*cpu<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		},
		Overhead: catalog.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi")}},
	}
	price := 0.04 * float64(cpu) * (1 - 0.01*float64(len(fmt.Sprint(cpu))))
	for i, z := range zones {
		it.Offerings = append(it.Offerings, catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeSpot, Price: price * (1 + 0.001*float64(i)), Available: true})
	}
	return it
}

func familyCatalog(fams []string, sizes []int64, zones ...string) []*catalog.InstanceType {
	var out []*catalog.InstanceType
	for _, f := range fams {
		for _, c := range sizes {
			out = append(out, familyType(f, c, zones...))
		}
	}
	return out
}

func minValuesPool(types []*catalog.InstanceType, fams []string, n int) *NodePool {
	np := defaultPool(types)
	r := NewRequirement(familyKey, corev1.NodeSelectorOpIn, fams...)
	r.MinValues = ptr.To(n)
	np.Requirements.Add(r)
	return np
}

func spotOptions(c *ClaimPlan) int {
	n := 0
	for _, o := range c.Options {
		if o.CapacityType == nsv1.CapacityTypeSpot {
			n++
		}
	}
	return n
}

func distinct(c *ClaimPlan, value func(LaunchOption) string) int {
	seen := map[string]bool{}
	for _, o := range c.Options {
		seen[value(o)] = true
	}
	return len(seen)
}

func withZoneSpread(app string) podOpt {
	return func(p *corev1.Pod) {
		p.Labels["app"] = app
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}}
	}
}

func TestSolveKeepsFlexibility(t *testing.T) {
	zones3 := []string{"z-a", "z-b", "z-c"}
	// a and b sell 16x and 32x, c stops at 8x: with minValues 3 on the
	// family, no claim may need more than an 8x.
	twoBig := append(familyCatalog([]string{"a", "b", "c"}, []int64{1, 2, 4, 8}, zones3...),
		familyType("a", 16, zones3...), familyType("a", 32, zones3...), familyType("b", 16, zones3...), familyType("b", 32, zones3...))
	// Six families in three zones, but the big sizes only in z-a: a claim
	// sized for a 32x would have 6 options, all in one zone.
	var oneZoneBig []*catalog.InstanceType
	for _, f := range []string{"a", "b", "c", "d", "e", "f"} {
		for _, c := range []int64{1, 2, 4, 8} {
			oneZoneBig = append(oneZoneBig, familyType(f, c, zones3...))
		}
		oneZoneBig = append(oneZoneBig, familyType(f, 16, "z-a"), familyType(f, 32, "z-a"))
	}
	// Four types in two zones: 8 spot options at most, the floor is waived.
	narrow := familyCatalog([]string{"a"}, []int64{1, 2, 4, 8}, "z-a", "z-b")
	tests := []struct {
		name      string
		in        Input
		claimsMin int
		claimsMax int
		unsched   int
		reason    string
		check     func(t *testing.T, c *ClaimPlan)
		// sameAsNoFloor: the plan costs what it costs with a floor of 1.
		sameAsNoFloor bool
	}{
		{
			name:      "minValues caps claims to types three families sell",
			in:        Input{Pods: pods(100, "w", "1500m", "1Gi"), NodePools: []*NodePool{minValuesPool(twoBig, []string{"a", "b", "c"}, 3)}},
			claimsMin: 20, claimsMax: 25,
			check: func(t *testing.T, c *ClaimPlan) {
				if n := distinct(c, func(o LaunchOption) string { return o.InstanceType.Labels[familyKey] }); n < 3 {
					t.Errorf("claim %s spans %d families, want 3", c.Name, n)
				}
				if cpu := c.Options[0].InstanceType.VCPU; c.Options[0].InstanceType.Capacity.Cpu().Value() > 8 {
					t.Errorf("claim %s launches a %s (%d vCPU), larger than any type of family c", c.Name, c.Options[0].InstanceType.Name, cpu)
				}
			},
		},
		{
			name:    "minValues no single pod can meet fails the pod with the reason",
			in:      Input{Pods: pods(1, "big", "20", "8Gi"), NodePools: []*NodePool{minValuesPool(twoBig, []string{"a", "b", "c"}, 3)}},
			unsched: 1, reason: "minValues 3",
		},
		{
			name:      "big types in one zone: claims stay small enough for 15 spot options over every zone",
			in:        Input{Pods: pods(120, "w", "1500m", "1Gi"), NodePools: []*NodePool{defaultPool(oneZoneBig)}},
			claimsMin: 20, claimsMax: 30,
			check: func(t *testing.T, c *ClaimPlan) {
				if n := spotOptions(c); n < 15 {
					t.Errorf("claim %s has %d spot options, want at least 15", c.Name, n)
				}
				if n := distinct(c, func(o LaunchOption) string { return o.Zone }); n < 3 {
					t.Errorf("claim %s spans %d zones, want 3 (its pods allow every zone)", c.Name, n)
				}
			},
		},
		{
			name:      "zone-spread pods count options in their zone",
			in:        Input{Pods: pods(60, "s", "1500m", "1Gi", withZoneSpread("s")), NodePools: []*NodePool{defaultPool(oneZoneBig)}},
			claimsMin: 3, claimsMax: 60,
			check: func(t *testing.T, c *ClaimPlan) {
				if n := distinct(c, func(o LaunchOption) string { return o.Zone }); n != 1 {
					t.Errorf("claim %s of zone-spread pods spans %d zones", c.Name, n)
				}
				if n := spotOptions(c); n < 15 {
					t.Errorf("claim %s has %d spot options in its zone, want at least 15", c.Name, n)
				}
			},
		},
		{
			name:      "a pool selling fewer than 15 options keeps its usual sizing",
			in:        Input{Pods: pods(20, "w", "250m", "512Mi"), NodePools: []*NodePool{defaultPool(narrow)}},
			claimsMin: 1, claimsMax: 20, sameAsNoFloor: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := Solve(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unschedulable) != tt.unsched {
				t.Fatalf("%d pods unschedulable, want %d: %v", len(plan.Unschedulable), tt.unsched, plan.Unschedulable)
			}
			for _, u := range plan.Unschedulable {
				if !strings.Contains(u.Reason, tt.reason) {
					t.Errorf("reason %q lacks %q", u.Reason, tt.reason)
				}
			}
			if n := len(plan.NewClaims); tt.unsched == 0 && (n < tt.claimsMin || n > tt.claimsMax) {
				t.Errorf("%d claims, want %d–%d", n, tt.claimsMin, tt.claimsMax)
			}
			for _, c := range plan.NewClaims {
				if tt.check != nil {
					tt.check(t, c)
				}
			}
			checkPlan(t, tt.in, plan)
			if tt.sameAsNoFloor {
				in := tt.in
				in.Options.MinSpotOptions = 1
				free, err := Solve(in)
				if err != nil {
					t.Fatal(err)
				}
				if plan.Cost() != free.Cost() || len(plan.NewClaims) != len(free.NewClaims) {
					t.Errorf("plan costs %.4f with %d claims, %.4f with %d without the floor", plan.Cost(), len(plan.NewClaims), free.Cost(), len(free.NewClaims))
				}
			}
		})
	}
}

// TestCheckerFlagsNarrowClaims makes sure the checker's flexibility rules
// can fail: a plan solved without the floor (claims sized for a type sold
// in one zone) and one whose options lose a family are both reported.
func TestCheckerFlagsNarrowClaims(t *testing.T) {
	zones3 := []string{"z-a", "z-b", "z-c"}
	var types []*catalog.InstanceType
	for _, f := range []string{"a", "b", "c", "d", "e", "f"} {
		for _, c := range []int64{1, 2, 4, 8} {
			types = append(types, familyType(f, c, zones3...))
		}
		types = append(types, familyType(f, 16, "z-a"), familyType(f, 32, "z-a"))
	}
	in := Input{Pods: pods(120, "w", "1500m", "1Gi"), NodePools: []*NodePool{minValuesPool(types, []string{"a", "b", "c", "d", "e", "f"}, 3)}, Options: Options{MinSpotOptions: 1}}
	plan, err := Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Options = Options{}
	errs := planViolations(in, plan)
	if !containsText(errs, "spot options although each of its pods") {
		t.Errorf("a plan without the floor passed the checker: %v", errs)
	}
	c := plan.NewClaims[0]
	c.Options = c.Options[:1]
	if errs := planViolations(in, plan); !containsText(errs, "below minValues 3") {
		t.Errorf("a claim with one family passed the checker: %v", errs)
	}
}

func containsText(xs []string, sub string) bool {
	for _, x := range xs {
		if strings.Contains(x, sub) {
			return true
		}
	}
	return false
}

// TestSolveLimitsPlacePodsFirst: in a pool with limits, a claim is charged
// for its cheapest type and the options minValues needs, so what fits in
// the limit is placed (54 of these 100 pods were refused when claims were
// charged for 15 spot options); minValues is never given up, and the spot
// floor only where the limit has no slack left for it.
func TestSolveLimitsPlacePodsFirst(t *testing.T) {
	zones3 := []string{"z-a", "z-b", "z-c"}
	var types []*catalog.InstanceType
	for i, f := range []string{"a", "b", "c", "d", "e", "f"} {
		for _, c := range []int64{1, 2, 4, 8, 16} {
			it := familyType(f, c, zones3...)
			mem := int64(2<<(i/2)) * c // 2, 4 or 8 GiB per vCPU
			it.Capacity[corev1.ResourceMemory] = *resource.NewQuantity(mem<<30, resource.BinarySI)
			for j := range it.Offerings {
				it.Offerings[j].Price *= 1 + 0.1*float64(i/2)
			}
			types = append(types, it)
		}
	}
	cases := []struct {
		name      string
		cpu, mem  string
		minPlaced int
		spotFloor bool // every claim keeps 15 spot options
	}{
		{"tight limit: pods first", "200", "600Gi", 93, false},
		{"loose limit: every floor kept", "400", "2000Gi", 100, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			np := minValuesPool(types, []string{"a", "b", "c", "d", "e", "f"}, 3)
			np.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(tc.cpu), corev1.ResourceMemory: resource.MustParse(tc.mem)}
			in := Input{Pods: pods(100, "w", "1500m", "1Gi"), NodePools: []*NodePool{np}}
			plan, err := Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			if n := plan.PodCount(); n < tc.minPlaced {
				t.Errorf("%d pods placed, want at least %d", n, tc.minPlaced)
			}
			for _, u := range plan.Unschedulable {
				if !strings.Contains(u.Reason, "limit") {
					t.Errorf("pod refused for something else than the limit: %s", u.Reason)
				}
			}
			for _, c := range plan.NewClaims {
				if n := spotOptions(c); tc.spotFloor && n < 15 {
					t.Errorf("claim %s has %d spot options, want at least 15", c.Name, n)
				}
				if n := distinct(c, func(o LaunchOption) string { return o.InstanceType.Labels[familyKey] }); n < 3 {
					t.Errorf("claim %s spans %d families, want 3", c.Name, n)
				}
			}
			checkPlan(t, in, plan)
		})
	}
}
