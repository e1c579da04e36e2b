package disruption

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// TestNarrow checks the option filters of a consolidation's replacement
// directly: with current prices the solver seldom offers the excluded
// options, so the table tests alone could not show the rules hold.
func TestNarrow(t *testing.T) {
	const od, spot = nsv1.CapacityTypeOnDemand, nsv1.CapacityTypeSpot
	types := map[string]*catalog.InstanceType{"small": itype("small", 2, 0.10, 0.03), "medium": itype("medium", 4, 0.20, 0.06), "large": itype("large", 8, 0.40, 0.12)}
	opt := func(it, zone, ct string, price float64) scheduling.LaunchOption {
		return scheduling.LaunchOption{InstanceType: types[it], Zone: zone, CapacityType: ct, Price: price}
	}
	claim := func(opts ...scheduling.LaunchOption) *scheduling.ClaimPlan {
		var its, zs []string
		for _, o := range opts {
			its, zs = append(its, o.InstanceType.Name), append(zs, o.Zone)
		}
		two := 2
		it := scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, its...)
		it.MinValues = &two
		return &scheduling.ClaimPlan{Name: "claim-0001", Options: opts, Requirements: scheduling.NewRequirements(it,
			scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zs...),
			scheduling.NewRequirement(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, opts[0].CapacityType))}
	}
	// A medium on-demand node priced at its launch price, $0.30/h.
	mediumOD := &nodeInfo{name: "n1", it: "medium", zone: "zone-a", ct: od, price: 0.30}
	mediumSpot := &nodeInfo{name: "n2", it: "medium", zone: "zone-a", ct: spot, price: 0.30}
	tests := []struct {
		name        string
		cands       []*nodeInfo
		cp          *scheduling.ClaimPlan
		gate        bool
		unavailable string
		wantKept    []string
		wantReason  SkipReason
	}{
		{
			name:  "same offering, dearer, and out-of-capacity options are dropped; the same type elsewhere for less is kept",
			cands: []*nodeInfo{mediumOD},
			cp: claim(opt("small", "zone-a", od, 0.10), opt("small", "zone-b", od, 0.10), opt("medium", "zone-a", od, 0.20),
				opt("medium", "zone-b", od, 0.20), opt("large", "zone-a", od, 0.40)),
			unavailable: "small/zone-b",
			wantKept:    []string{"small/zone-a", "medium/zone-b"},
		},
		{
			name:       "only the node's own offering is cheap enough",
			cands:      []*nodeInfo{mediumOD},
			cp:         claim(opt("medium", "zone-a", od, 0.20), opt("large", "zone-a", od, 0.40)),
			wantReason: SkipNotCheaper,
		},
		{
			name: "a candidate's type is kept only below that candidate's price",
			cands: []*nodeInfo{{name: "a", it: "medium", zone: "zone-a", ct: od, price: 0.20},
				{name: "b", it: "small", zone: "zone-a", ct: od, price: 0.10}},
			cp:         claim(opt("medium", "zone-b", od, 0.20), opt("small", "zone-b", od, 0.10)),
			wantReason: SkipNotCheaper, // small alone is left: one value, minValues 2
		},
		{
			name:       "spot to spot without the gate",
			cands:      []*nodeInfo{mediumSpot},
			cp:         claim(opt("small", "zone-a", spot, 0.03), opt("small", "zone-b", spot, 0.03)),
			wantReason: SkipSpotToSpotDisabled,
		},
		{
			name:       "spot to spot with the gate but two options",
			cands:      []*nodeInfo{mediumSpot},
			cp:         claim(opt("small", "zone-a", spot, 0.03), opt("small", "zone-b", spot, 0.03)),
			gate:       true,
			wantReason: SkipSpotToSpotFlexibility,
		},
		{
			name:     "on-demand to spot needs no gate",
			cands:    []*nodeInfo{mediumOD},
			cp:       claim(opt("small", "zone-a", spot, 0.03), opt("medium", "zone-b", spot, 0.06)),
			wantKept: []string{"small/zone-a", "medium/zone-b"},
		},
		{
			name:       "minValues unmet after the cut",
			cands:      []*nodeInfo{mediumOD},
			cp:         claim(opt("small", "zone-a", od, 0.10), opt("large", "zone-b", od, 0.40)),
			wantReason: SkipNotCheaper,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &working{opts: Options{SpotToSpotConsolidation: tt.gate}.withDefaults()}
			if tt.unavailable != "" {
				w.in.Unavailable = func(it, zone, _ string) bool { return it+"/"+zone == tt.unavailable }
			}
			price := 0.0
			for _, c := range tt.cands {
				price += c.price
			}
			before := len(tt.cp.Options)
			beforeReq := tt.cp.Requirements.Get(corev1.LabelInstanceTypeStable).String()
			got, reason, msg := w.narrow(tt.cp, tt.cands, price*0.9, w.opts.MinSpotOptions)
			if len(tt.cp.Options) != before || tt.cp.Requirements.Get(corev1.LabelInstanceTypeStable).String() != beforeReq {
				t.Errorf("narrow modified the solver's claim plan")
			}
			if tt.wantReason != "" {
				if got != nil || reason != tt.wantReason || msg == "" {
					t.Fatalf("narrow = %v, %q (%s); want %s", got, reason, msg, tt.wantReason)
				}
				return
			}
			if got == nil {
				t.Fatalf("narrow refused: %s %s", reason, msg)
			}
			var kept []string
			for _, o := range got.Options {
				kept = append(kept, o.InstanceType.Name+"/"+o.Zone)
			}
			if strings.Join(kept, ",") != strings.Join(tt.wantKept, ",") {
				t.Fatalf("kept %v, want %v", kept, tt.wantKept)
			}
			if r := got.Requirements.Get(corev1.LabelInstanceTypeStable); r.MinValues == nil || r.Len() != len(distinct(tt.wantKept, 0)) {
				t.Errorf("instance-type requirement %s lost its minValues or was not narrowed", r)
			}
			if r := got.Requirements.Get(corev1.LabelTopologyZone); r.Len() != len(distinct(tt.wantKept, 1)) {
				t.Errorf("zone requirement %s not narrowed", r)
			}
		})
	}
}

func distinct(pairs []string, part int) map[string]bool {
	out := map[string]bool{}
	for _, p := range pairs {
		out[strings.Split(p, "/")[part]] = true
	}
	return out
}
