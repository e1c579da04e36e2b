package provisioning

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

// limitTypes: c and m families of 4 and 16 vCPU (c: 2 GiB per vCPU, m: 4),
// spot in two zones, c cheapest.
func limitTypes() []*catalog.InstanceType {
	var out []*catalog.InstanceType
	for _, fam := range []struct {
		name  string
		gib   int64
		price float64
	}{{"c", 2, 0.04}, {"m", 4, 0.05}} {
		for _, cpu := range []int64{4, 16} {
			name := fmt.Sprintf("%s.%dx", fam.name, cpu)
			it := &catalog.InstanceType{Name: name,
				Labels: map[string]string{corev1.LabelInstanceTypeStable: name, "test/family": fam.name},
				Capacity: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(cpu*fam.gib<<30, resource.BinarySI),
				}}
			for _, z := range []string{"z-a", "z-b"} {
				it.Offerings = append(it.Offerings, catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeSpot, Price: fam.price * float64(cpu), Available: z == "z-a" || fam.name == "m"})
			}
			out = append(out, it)
		}
	}
	return out
}

func limitClaim(name string, types ...string) *nsv1.NodeClaim {
	return &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{nsv1.LabelNodePool: "p"}},
		Spec: nsv1.NodeClaimSpec{Requirements: []nsv1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: types},
			{Key: nsv1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{nsv1.CapacityTypeSpot}},
		}}}
}

func TestClaimOptions(t *testing.T) {
	c := limitClaim("a", "c.4x", "m.4x")
	c.Spec.Requirements = append(c.Spec.Requirements, nsv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z-b"}})
	var got []string
	for _, o := range ClaimOptions(c, limitTypes(), false) {
		got = append(got, o.InstanceType.Name+"/"+o.Zone)
	}
	if fmt.Sprint(got) != "[m.4x/z-b]" { // c.4x is not available in z-b
		t.Fatalf("available options %v", got)
	}
	got = nil
	for _, o := range ClaimOptions(c, limitTypes(), true) {
		got = append(got, o.InstanceType.Name+"/"+o.Zone)
	}
	if fmt.Sprint(got) != "[c.4x/z-b m.4x/z-b]" {
		t.Fatalf("all options %v", got)
	}
}

func TestUsageChargesExpectedLaunch(t *testing.T) {
	inFlight := limitClaim("a", "c.4x", "m.16x")
	res, n := Usage([]*nsv1.NodeClaim{inFlight}, limitTypes())
	if cpu := res[corev1.ResourceCPU]; n != 1 || cpu.Cmp(resource.MustParse("4")) != 0 {
		t.Fatalf("Usage = %s cpu, %d nodes; want c.4x's 4 (its cheapest option), 1", cpu.String(), n)
	}
}

func TestLaunchUsage(t *testing.T) {
	gi := func(n int64) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(n<<30, resource.BinarySI)}
	}
	launched := func(name string, g int64) *nsv1.NodeClaim {
		c := limitClaim(name, "c.4x")
		c.Status.Capacity = gi(g)
		return c
	}
	self := limitClaim("self", "c.4x")
	self.Annotations = map[string]string{nsv1.AnnotationReplacementFor: "cmd-1"}
	deleting := launched("deleting", 100)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	candidate := launched("candidate", 200)
	candidate.Annotations = map[string]string{nsv1.AnnotationDisruptionCommand: "cmd-1"}
	other := launched("other-command", 400)
	other.Annotations = map[string]string{nsv1.AnnotationDisruptionCommand: "cmd-2"}
	claims := []*nsv1.NodeClaim{self, launched("a", 8), deleting, candidate, other, limitClaim("not-launched", "m.16x"), limitClaim("lagging", "c.4x")}
	recent := map[string]corev1.ResourceList{"lagging": gi(16), "a": gi(1000), "unlisted": gi(32), "self": gi(1000)}
	got := LaunchUsage(self, claims, recent)
	// a (its status wins over the recent record) + other-command + lagging + unlisted.
	if mem := got[corev1.ResourceMemory]; mem.Cmp(*resource.NewQuantity((8+400+16+32)<<30, resource.BinarySI)) != 0 {
		t.Fatalf("LaunchUsage = %s memory, want 456Gi", mem.String())
	}
}

func TestTrimClaim(t *testing.T) {
	pool := func(limits corev1.ResourceList, minValues int) *nsv1.NodePool {
		np := &nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		np.Spec.Limits = nsv1.Limits(limits)
		if minValues > 0 {
			np.Spec.Template.Spec.Requirements = []nsv1.NodeSelectorRequirementWithMinValues{{Key: "test/family", Operator: corev1.NodeSelectorOpExists, MinValues: ptr.To(minValues)}}
		}
		return np
	}
	mem := func(g int64) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(g<<30, resource.BinarySI)}
	}
	claim := limitClaim("x", "c.4x", "m.4x", "c.16x", "m.16x")
	for _, tc := range []struct {
		name    string
		np      *nsv1.NodePool
		counted corev1.ResourceList
		want    string // instance types kept, or the refusal's start
	}{
		{"no resource limit", pool(corev1.ResourceList{nsv1.ResourceNodes: resource.MustParse("3")}, 0), mem(1000), "[c.4x m.4x c.16x m.16x]"},
		{"room for all", pool(mem(200), 2), mem(100), "[c.4x m.4x c.16x m.16x]"},
		{"large types dropped", pool(mem(200), 2), mem(160), "[c.4x m.4x c.16x]"},
		{"minValues kept", pool(mem(200), 2), mem(184), "[c.4x m.4x]"},
		{"minValues lost", pool(mem(200), 2), mem(188), "pool \"p\": minValues 2 for test/family"},
		{"nothing fits", pool(mem(200), 0), mem(195), "pool \"p\": limit memory: 200Gi would be exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := TrimClaim(tc.np, claim, limitTypes(), tc.counted)
			if why != "" {
				if got != nil || !strings.HasPrefix(why, tc.want) {
					t.Fatalf("refused: %q; want %s", why, tc.want)
				}
				return
			}
			var types []string
			for _, r := range got.Spec.Requirements {
				if r.Key == corev1.LabelInstanceTypeStable {
					types = r.Values
				}
			}
			if fmt.Sprint(types) != tc.want {
				t.Fatalf("kept %v, want %s", types, tc.want)
			}
			if len(claim.Spec.Requirements[0].Values) != 4 {
				t.Fatal("TrimClaim changed the claim it was given")
			}
		})
	}
}

func TestLimitTight(t *testing.T) {
	np := &nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	np.Spec.Limits = nsv1.Limits{corev1.ResourceCPU: resource.MustParse("24")}
	launched := limitClaim("launched", "c.4x")
	launched.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	small, big := limitClaim("small", "c.4x", "m.4x"), limitClaim("big", "c.4x", "c.16x")
	unknown := limitClaim("unknown", "gone.4x")
	for _, tc := range []struct {
		name   string
		listed []*nsv1.NodeClaim
		batch  []*nsv1.NodeClaim
		recent map[string]corev1.ResourceList
		want   bool
	}{
		{"every largest option fits", []*nsv1.NodeClaim{launched, small}, []*nsv1.NodeClaim{big}, nil, false}, // 4 + 4 + 16
		{"the batch counts though not listed", []*nsv1.NodeClaim{launched, small}, []*nsv1.NodeClaim{big, limitClaim("big2", "c.16x")}, nil, true},
		{"a recent launch counts its capacity, not its options", []*nsv1.NodeClaim{launched, big}, nil, map[string]corev1.ResourceList{"big": {corev1.ResourceCPU: resource.MustParse("20")}}, false}, // 4 + 20
		{"unknown types are tight", []*nsv1.NodeClaim{unknown}, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LimitTight(np, tc.listed, tc.batch, limitTypes(), tc.recent); got != tc.want {
				t.Fatalf("LimitTight = %v, want %v", got, tc.want)
			}
		})
	}
}
