package scheduling

import (
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// handClaim is a claim of pool np holding pods, launchable as type name
// on-demand in each of zones.
func handClaim(t *testing.T, np *NodePool, name, typ string, zones []string, pods ...*corev1.Pod) *ClaimPlan {
	t.Helper()
	var it *catalog.InstanceType
	for _, x := range np.InstanceTypes {
		if x.Name == typ {
			it = x
		}
	}
	if it == nil {
		t.Fatalf("no type %s", typ)
	}
	c := &ClaimPlan{Name: name, NodePool: np.Name, Pods: pods}
	for _, z := range zones {
		for _, o := range it.Offerings {
			if o.Zone == z && o.CapacityType == nsv1.CapacityTypeOnDemand {
				c.Options = append(c.Options, LaunchOption{InstanceType: it, Zone: z, CapacityType: o.CapacityType, Price: o.Price})
			}
		}
	}
	return c
}

// handClaimOf is handClaim with the options of capacity type ct and of
// every type in typs.
func handClaimOf(t *testing.T, np *NodePool, name, ct string, typs []string, zones []string, pods ...*corev1.Pod) *ClaimPlan {
	t.Helper()
	c := &ClaimPlan{Name: name, NodePool: np.Name, Pods: pods}
	for _, typ := range typs {
		for _, it := range np.InstanceTypes {
			if it.Name != typ {
				continue
			}
			for _, z := range zones {
				for _, o := range it.Offerings {
					if o.Zone == z && o.CapacityType == ct {
						c.Options = append(c.Options, LaunchOption{InstanceType: it, Zone: z, CapacityType: ct, Price: o.Price})
					}
				}
			}
		}
	}
	sort.SliceStable(c.Options, func(i, j int) bool { return c.Options[i].Price < c.Options[j].Price })
	return c
}

func withSpreadOver(key, label string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": label}},
		})
	}
}

// TestCheckerJudgesTheFinalState makes sure the checker's topology rules
// can fail on plans that only look valid when a spread counts the
// spreading pods alone, or in a lucky binding order, and pass the same
// plans once they are fixed.
func TestCheckerJudgesTheFinalState(t *testing.T) {
	zoneA, zoneB, both := []string{"zone-a"}, []string{"zone-b"}, []string{"zone-a", "zone-b"}
	cases := []struct {
		name  string
		build func(np *NodePool) (Input, *Plan)
		want  string // "" when the plan is valid
	}{
		{"hostname spread counts plain pods on the node", func(np *NodePool) (Input, *Plan) {
			spreader := mkPod("s", "100m", "100Mi", withLabel("my-label", "a"), withSpreadOver(corev1.LabelHostname, "b"))
			plain := pods(2, "b", "100m", "100Mi", withLabel("my-label", "b"))
			in := Input{Pods: append([]*corev1.Pod{spreader}, plain...), NodePools: []*NodePool{np}}
			return in, &Plan{NewClaims: []*ClaimPlan{handClaim(t, np, "c1", "m.2x", zoneA, spreader, plain[0], plain[1]), handClaim(t, np, "c2", "m.1x", zoneA, mkPod("x", "100m", "100Mi"))}}
		}, "skew 2 > 1"},
		{"hostname spread with one matching pod per node", func(np *NodePool) (Input, *Plan) {
			spreader := mkPod("s", "100m", "100Mi", withLabel("my-label", "a"), withSpreadOver(corev1.LabelHostname, "b"))
			plain := pods(2, "b", "100m", "100Mi", withLabel("my-label", "b"))
			in := Input{Pods: append([]*corev1.Pod{spreader}, plain...), NodePools: []*NodePool{np}}
			return in, &Plan{NewClaims: []*ClaimPlan{handClaim(t, np, "c1", "m.2x", zoneA, spreader, plain[0]), handClaim(t, np, "c2", "m.1x", zoneA, plain[1])}}
		}, ""},
		{"zone spread counts plain pods in the zone", func(np *NodePool) (Input, *Plan) {
			spreader := mkPod("s", "100m", "100Mi", withLabel("my-label", "a"), withSpreadOver(corev1.LabelTopologyZone, "b"))
			plain := pods(2, "b", "100m", "100Mi", withLabel("my-label", "b"))
			in := Input{Pods: append([]*corev1.Pod{spreader}, plain...), NodePools: []*NodePool{np}}
			return in, &Plan{NewClaims: []*ClaimPlan{handClaim(t, np, "c1", "m.2x", zoneA, spreader, plain[0], plain[1]), handClaim(t, np, "c2", "m.1x", zoneB, mkPod("x", "100m", "100Mi"))}}
		}, "skew 2 > 1"},
		{"a claim spanning zones may not hold a counted pod", func(np *NodePool) (Input, *Plan) {
			spreader := mkPod("s", "100m", "100Mi", withLabel("my-label", "a"), withSpreadOver(corev1.LabelTopologyZone, "b"))
			plain := mkPod("b", "100m", "100Mi", withLabel("my-label", "b"))
			in := Input{Pods: []*corev1.Pod{spreader, plain}, NodePools: []*NodePool{np}}
			return in, &Plan{NewClaims: []*ClaimPlan{handClaim(t, np, "c1", "m.1x", zoneA, spreader), handClaim(t, np, "c2", "m.1x", both, plain)}}
		}, "may launch in zones"},
		{"zone spread balanced over the zones", func(np *NodePool) (Input, *Plan) {
			spreader := mkPod("s", "100m", "100Mi", withLabel("my-label", "a"), withSpreadOver(corev1.LabelTopologyZone, "b"))
			plain := pods(2, "b", "100m", "100Mi", withLabel("my-label", "b"))
			in := Input{Pods: append([]*corev1.Pod{spreader}, plain...), NodePools: []*NodePool{np}}
			return in, &Plan{NewClaims: []*ClaimPlan{handClaim(t, np, "c1", "m.2x", zoneA, spreader, plain[0]), handClaim(t, np, "c2", "m.1x", zoneB, plain[1])}}
		}, ""},
		{"an existing pod's anti-affinity repels a nominated pod", func(np *NodePool) (Input, *Plan) {
			web := mkPod("web", "100m", "100Mi", withLabel("app", "web"))
			n := mkNode("n1", "zone-a", "4", "8Gi", mkPod("old", "100m", "100Mi", withAnti(corev1.LabelHostname, "web")))
			in := Input{Pods: []*corev1.Pod{web}, Nodes: []*ExistingNode{n}, NodePools: []*NodePool{np}}
			return in, &Plan{Nominations: []Nomination{{Pod: web, Node: "n1"}}}
		}, "other matching pods there"},
		{"capacity-type spread counts every matching pod per capacity type", func(np *NodePool) (Input, *Plan) {
			spreader := mkPod("s", "100m", "100Mi", withLabel("my-label", "b"), withSpreadOver(nsv1.LabelCapacityType, "b"))
			plain := pods(3, "b", "100m", "100Mi", withLabel("my-label", "b"))
			in := Input{Pods: append([]*corev1.Pod{spreader}, plain...), NodePools: []*NodePool{np}}
			return in, &Plan{NewClaims: []*ClaimPlan{
				handClaimOf(t, np, "c1", nsv1.CapacityTypeSpot, []string{"m.2x"}, zoneA, spreader, plain[0], plain[1]),
				handClaimOf(t, np, "c2", nsv1.CapacityTypeOnDemand, []string{"m.1x"}, zoneA, plain[2]),
			}}
		}, "skew 2 > 1"},
		{"capacity-type spread split evenly", func(np *NodePool) (Input, *Plan) {
			spreader := mkPod("s", "100m", "100Mi", withLabel("my-label", "b"), withSpreadOver(nsv1.LabelCapacityType, "b"))
			plain := pods(3, "b", "100m", "100Mi", withLabel("my-label", "b"))
			// A floor of one spot option: the hand-made claim lists few.
			in := Input{Pods: append([]*corev1.Pod{spreader}, plain...), NodePools: []*NodePool{np}, Options: Options{MinSpotOptions: 1}}
			return in, &Plan{NewClaims: []*ClaimPlan{
				handClaimOf(t, np, "c1", nsv1.CapacityTypeSpot, []string{"m.2x"}, both, spreader, plain[0]),
				handClaimOf(t, np, "c2", nsv1.CapacityTypeOnDemand, []string{"m.1x"}, zoneA, plain[1], plain[2]),
			}}
		}, ""},
		{"a claim spanning instance types may not hold a pod an instance-type rule counts", func(np *NodePool) (Input, *Plan) {
			db := pods(2, "db", "100m", "100Mi", withLabel("app", "db"), withAnti(corev1.LabelInstanceTypeStable, "db"))
			in := Input{Pods: db, NodePools: []*NodePool{np}}
			return in, &Plan{NewClaims: []*ClaimPlan{
				handClaimOf(t, np, "c1", nsv1.CapacityTypeOnDemand, []string{"m.1x", "m.2x"}, zoneA, db[0]),
				handClaimOf(t, np, "c2", nsv1.CapacityTypeOnDemand, []string{"m.4x"}, zoneA, db[1]),
			}}
		}, "node.kubernetes.io/instance-type values"},
		{"instance-type anti-affinity on one type twice", func(np *NodePool) (Input, *Plan) {
			db := pods(2, "db", "100m", "100Mi", withLabel("app", "db"), withAnti(corev1.LabelInstanceTypeStable, "db"))
			in := Input{Pods: db, NodePools: []*NodePool{np}}
			return in, &Plan{NewClaims: []*ClaimPlan{
				handClaimOf(t, np, "c1", nsv1.CapacityTypeOnDemand, []string{"m.2x"}, zoneA, db[0]),
				handClaimOf(t, np, "c2", nsv1.CapacityTypeOnDemand, []string{"m.2x"}, zoneB, db[1]),
			}}
		}, "other matching pods there"},
		{"custom-label spread over two pools' template labels", func(np *NodePool) (Input, *Plan) {
			np.Labels["team"] = "a"
			spreader := pods(3, "s", "100m", "100Mi", withLabel("my-label", "b"), withSpreadOver("team", "b"))
			in := Input{Pods: spreader, NodePools: []*NodePool{np}, Nodes: []*ExistingNode{func() *ExistingNode {
				n := mkNode("n1", "zone-a", "4", "8Gi")
				n.Labels["team"] = "b"
				return n
			}()}}
			return in, &Plan{NewClaims: []*ClaimPlan{handClaimOf(t, np, "c1", nsv1.CapacityTypeOnDemand, []string{"m.2x"}, zoneA, spreader...)}}
		}, "skew 3 > 1"},
		{"pod affinity to pods that are not placed", func(np *NodePool) (Input, *Plan) {
			follower := mkPod("f", "100m", "100Mi", withAffinity(corev1.LabelTopologyZone, "db"))
			db := mkPod("db", "100m", "100Mi", withLabel("app", "db"))
			in := Input{Pods: []*corev1.Pod{follower, db}, NodePools: []*NodePool{np}}
			return in, &Plan{NewClaims: []*ClaimPlan{handClaim(t, np, "c1", "m.1x", zoneA, follower), handClaim(t, np, "c2", "m.1x", zoneB, db)}}
		}, "not met"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, plan := tc.build(mkPool("p", 1))
			errs := planViolations(in, plan)
			if tc.want == "" && len(errs) > 0 {
				t.Errorf("valid plan flagged: %v", errs)
			}
			if tc.want != "" && !containsText(errs, tc.want) {
				t.Errorf("violation %q not flagged: %v", tc.want, errs)
			}
		})
	}
}
