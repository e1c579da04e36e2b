package provisioning

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/providers/aws/plan"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// TestClaimsLaunchAsPlanned holds the solver and the AWS launch planner to
// one view of a claim: every (type, zone) option the solver counted for a
// claim is an option of its launch, so the spot-option floor the solver
// sized the claim for is what EC2 is offered. The pool is the shipped
// example (six families, minValues 3, spot only) over the whole catalog,
// bare-metal and GPU types included, with pods small and large enough to
// make claims of every size; the pool's limits (1000 cpu, 1000Gi) bind on
// the largest shapes, so limit-trimmed lists are held too.
func TestClaimsLaunchAsPlanned(t *testing.T) {
	np := examplePool(t, "spot-fleet.yaml")
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var subnets []plan.Subnet
	for i, z := range cat.Zones() {
		subnets = append(subnets, plan.Subnet{ID: fmt.Sprintf("subnet-%d", i), Zone: z, FreeIPs: 4096})
	}
	shapes := []struct {
		n        int
		cpu, mem string
	}{
		{1, "500m", "128Mi"}, {40, "500m", "128Mi"}, {1000, "500m", "128Mi"},
		{30, "4", "8Gi"}, {200, "7", "14Gi"}, {12, "30", "60Gi"},
	}
	for _, sh := range shapes {
		t.Run(fmt.Sprintf("%dx%s-%s", sh.n, sh.cpu, sh.mem), func(t *testing.T) {
			var pods []*corev1.Pod
			for i := 0; i < sh.n; i++ {
				p := pendingPod(fmt.Sprintf("p%d", i))
				p.UID = types.UID(p.Name)
				p.Spec.NodeSelector = map[string]string{"fleet": "spot"}
				p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(sh.cpu), corev1.ResourceMemory: resource.MustParse(sh.mem)}}}}
				pods = append(pods, p)
			}
			sp := scheduling.NodePoolFromAPI(np, cat.Types())
			sp.Labels[nsv1.LabelNodePool] = np.Name
			out, err := scheduling.Solve(scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{sp}})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.NewClaims) == 0 {
				t.Fatalf("no claim planned (%d pods unplaced)", len(out.Unschedulable))
			}
			for i, cp := range out.NewClaims {
				c := NewNodeClaim(np, cp, fmt.Sprintf("c%d", i))
				pl, err := plan.Make(plan.Input{Requirements: c.Spec.Requirements, Requests: c.Spec.Resources.Requests,
					InstanceTypes: cat.Types(), Subnets: subnets})
				if err != nil {
					t.Fatalf("claim %d (%d pods): %v", i, len(cp.Pods), err)
				}
				launched := map[string]bool{}
				for _, o := range pl.Options {
					launched[o.InstanceType.Name+"/"+o.Zone] = true
				}
				spot := 0
				for _, o := range cp.Options {
					if o.CapacityType == nsv1.CapacityTypeSpot {
						spot++
					}
					if !launched[o.InstanceType.Name+"/"+o.Zone] && len(pl.Options) < plan.DefaultMaxOptions {
						t.Errorf("claim %d (%d pods): the solver counted %s in %s, the launch leaves it out (%d launch options)",
							i, len(cp.Pods), o.InstanceType.Name, o.Zone, len(pl.Options))
					}
				}
				if want := min(spot, scheduling.DefaultMinSpotOptions); len(pl.Options) < want {
					t.Errorf("claim %d (%d pods): %d launch options, the solver planned %d spot options", i, len(cp.Pods), len(pl.Options), spot)
				}
			}
		})
	}
}

// examplePool reads the NodePool of a file in examples/.
func examplePool(t *testing.T, file string) *nsv1.NodePool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		if bytes.Contains(doc, []byte("\nkind: NodePool")) {
			np := &nsv1.NodePool{}
			if err := yaml.UnmarshalStrict(doc, np); err != nil {
				t.Fatal(err)
			}
			np.ObjectMeta = metav1.ObjectMeta{Name: np.Name, UID: "pool"}
			return np
		}
	}
	t.Fatalf("examples/%s has no NodePool", file)
	return nil
}
