package scheduling

import (
	"testing"

	"k8s.io/utils/ptr"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// TestOptionPriceCeiling: a claim lists only options priced within its
// ceiling times its cheapest option, widened past it only for the 15
// spot-option floor and minValues.
func TestOptionPriceCeiling(t *testing.T) {
	zones := []string{"z-a", "z-b", "z-c"}
	fams := []string{"a", "b", "c", "d", "e", "f"}
	sizes := []int64{1, 2, 4, 8, 16, 32, 64}
	cases := []struct {
		name    string
		pool    func() *NodePool
		opts    Options
		ceiling float64
		check   func(t *testing.T, c *ClaimPlan)
	}{
		{name: "default: at most twice the cheapest", pool: func() *NodePool { return defaultPool(familyCatalog(fams, sizes, zones...)) }, ceiling: 2,
			check: func(t *testing.T, c *ClaimPlan) {
				if n := spotOptions(c); n < 15 {
					t.Errorf("%d spot options, want at least 15", n)
				}
			}},
		{name: "option ceiling 4", pool: func() *NodePool { return defaultPool(familyCatalog(fams, sizes, zones...)) }, opts: Options{OptionPriceCeiling: 4}, ceiling: 4,
			check: func(t *testing.T, c *ClaimPlan) {
				if last := c.Options[len(c.Options)-1].Price; last <= 2*c.Options[0].Price {
					t.Errorf("dearest option %.4f is within 2x of %.4f; a 4x ceiling keeps dearer ones", last, c.Options[0].Price)
				}
			}},
		{name: "pool ceiling 1: the cheapest price, widened to 15 spot options", pool: func() *NodePool {
			np := defaultPool(familyCatalog(fams, sizes, zones...))
			np.OptionPriceCeiling = 1
			return np
		}, opts: Options{OptionPriceCeiling: 4}, ceiling: 1,
			check: func(t *testing.T, c *ClaimPlan) {
				if n := len(c.Options); n != 15 {
					t.Errorf("%d options, want exactly the 15 the spot floor needs", n)
				}
			}},
		{name: "minValues widens past the ceiling", pool: func() *NodePool {
			types := familyCatalog(fams, sizes, zones...)
			for _, it := range types {
				if it.Labels[familyKey] != "a" {
					for i := range it.Offerings {
						it.Offerings[i].Price *= 3
					}
				}
			}
			return minValuesPool(types, fams, 3)
		}, ceiling: 2,
			check: func(t *testing.T, c *ClaimPlan) {
				if n := distinct(c, func(o LaunchOption) string { return o.InstanceType.Labels[familyKey] }); n < 3 {
					t.Errorf("%d families, want 3", n)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pods: pods(1, "w", "500m", "1Gi"), NodePools: []*NodePool{tc.pool()}, Options: tc.opts}
			plan, err := Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.NewClaims) != 1 {
				t.Fatalf("%d claims, want 1", len(plan.NewClaims))
			}
			c := plan.NewClaims[0]
			tc.check(t, c)
			// Past the ceiling only what a floor needs: options are
			// price-ordered, so each dearer one must add a spot option below
			// 15 or a family the list lacks.
			limit := tc.ceiling * c.Options[0].Price * (1 + 1e-9)
			spot, fam := 0, map[string]bool{}
			for _, o := range c.Options {
				needed := o.CapacityType == nsv1.CapacityTypeSpot && spot < 15 || !fam[o.InstanceType.Labels[familyKey]] && len(fam) < 3
				if o.Price > limit && !needed {
					t.Errorf("option %s/%s at %.4f is above %.4f and no floor needs it", o.InstanceType.Name, o.Zone, o.Price, limit)
				}
				if o.CapacityType == nsv1.CapacityTypeSpot {
					spot++
				}
				fam[o.InstanceType.Labels[familyKey]] = true
			}
			checkPlan(t, in, plan)
		})
	}
}

func TestNodePoolFromAPIOptionPriceCeiling(t *testing.T) {
	np := &nsv1.NodePool{}
	if got := NodePoolFromAPI(np, nil).OptionPriceCeiling; got != 0 {
		t.Errorf("unset ceiling = %v, want 0 (the solver's default)", got)
	}
	np.Spec.OptionPriceCeilingPercent = ptr.To[int32](150)
	if got := NodePoolFromAPI(np, nil).OptionPriceCeiling; got != 1.5 {
		t.Errorf("150%% ceiling = %v, want 1.5", got)
	}
}

// TestCheckerFlagsOptionsAboveCeiling makes sure the checker's ceiling
// rule can fail: a plan solved with a 4x ceiling is judged against 2x.
func TestCheckerFlagsOptionsAboveCeiling(t *testing.T) {
	in := Input{Pods: pods(1, "w", "500m", "1Gi"), NodePools: []*NodePool{defaultPool(familyCatalog([]string{"a", "b", "c", "d", "e", "f"}, []int64{1, 2, 4, 8, 16}, "z-a", "z-b", "z-c"))}, Options: Options{OptionPriceCeiling: 4}}
	plan, err := Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	if errs := planViolations(in, plan); len(errs) > 0 {
		t.Fatalf("plan invalid under its own ceiling: %v", errs)
	}
	in.Options.OptionPriceCeiling = 2
	if errs := planViolations(in, plan); !containsText(errs, "options above 2.00×") {
		t.Errorf("options up to 4x passed a 2x ceiling: %v", errs)
	}
}
