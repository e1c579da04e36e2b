package disruption

import (
	"strings"
	"testing"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// An on-demand node a commitment covers is prepaid: returning it to spot
// (or replacing it with anything) saves only what the commitment leaves
// uncovered. Covered, it stays; with too small a commitment it goes.
func TestCommitmentsKeepCoveredOnDemand(t *testing.T) {
	const od, spot = nsv1.CapacityTypeOnDemand, nsv1.CapacityTypeSpot
	tests := []struct {
		name        string
		commitments []catalog.Commitment
		want        []string
		wantSkip    SkipReason
	}{
		{name: "no commitment: back to spot", want: []string{"ReturnToSpot[p-01]+1"}},
		{name: "a commitment covering the node: it stays", commitments: []catalog.Commitment{{Name: "sp", Hourly: 0.25}}, wantSkip: SkipNotCheaper},
		{name: "a commitment covering a tenth of it: back to spot", commitments: []catalog.Commitment{{Name: "sp", Hourly: 0.02}}, want: []string{"ReturnToSpot[p-01]+1"}},
		{name: "a family commitment of another family covers nothing", commitments: []catalog.Commitment{{Name: "ri", Family: "x9", Region: "us-east-1", Hourly: 5}},
			want: []string{"ReturnToSpot[p-01]+1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(pool("p", capacityTypes(spot, od), policy(nsv1.ConsolidationPolicyWhenEmpty)))
			w.types["p"] = returnCatalog(0.06)
			n := w.node("p", "m-00", "zone-a", od, fellBack)
			w.pod(n, "2")
			w.snap.Commitments = tt.commitments
			plan, _, err := compute(w.input())
			if err != nil {
				t.Fatal(err)
			}
			if got := summaries(plan); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("actions %v, want %v\nskips: %+v", got, tt.want, plan.Skipped)
			}
			if tt.wantSkip != "" && (len(plan.Skipped) != 1 || plan.Skipped[0].Reason != tt.wantSkip) {
				t.Fatalf("skips %+v, want one %s", plan.Skipped, tt.wantSkip)
			}
		})
	}
}

// Deleting a node whose pods fit elsewhere saves its price; a node a
// commitment covers (or one in a capacity reservation) costs nothing more,
// so deleting it saves nothing and only moves its pods: it stays. Without
// the commitment the same node is deleted.
func TestPrepaidNodeIsNotDeletedForNothing(t *testing.T) {
	tests := []struct {
		name        string
		commitments []catalog.Commitment
		unpriced    bool
		want        []string
		wantSkip    SkipReason
	}{
		{name: "list price: deleted, its pod moves", want: []string{"SingleNodeConsolidation[p-01]"}},
		{name: "price unknown (not prepaid): not kept as prepaid", unpriced: true},
		{name: "covered by a commitment: deleting saves nothing", commitments: []catalog.Commitment{{Name: "sp", Hourly: 1}}, wantSkip: SkipNotCheaper},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(pool("p", capacityTypes(nsv1.CapacityTypeOnDemand)))
			if tt.unpriced {
				// No price anywhere for the large type: the catalog's
				// offerings say $0 and the claim records none.
				for i, it := range w.types["p"] {
					if it.Name == "large" {
						offs := append(catalog.Offerings(nil), it.Offerings...)
						for j := range offs {
							offs[j].Price = 0
						}
						w.types["p"][i] = it.WithOfferings(offs)
					}
				}
			}
			a := w.node("p", "large", "zone-a", nsv1.CapacityTypeOnDemand)
			w.pod(a, "2")
			var bOpts []nodeOpt
			if tt.unpriced {
				// Only the unpriced node is a candidate.
				bOpts = append(bOpts, nodeAnnotation(nsv1.AnnotationDoNotDisrupt, "true"))
			}
			b := w.node("p", "medium", "zone-a", nsv1.CapacityTypeOnDemand, bOpts...)
			w.pod(b, "1")
			w.snap.Commitments = tt.commitments
			plan, _, err := compute(w.input())
			if err != nil {
				t.Fatal(err)
			}
			if tt.unpriced {
				// A node whose price is unknown reads $0 but is not
				// prepaid: it stays a consolidation candidate.
				for _, sk := range plan.Skipped {
					if sk.Claim == a && strings.Contains(sk.Message, "saves nothing") {
						t.Fatalf("the unpriced node was kept as prepaid: %+v", sk)
					}
				}
				if got := summaries(plan); strings.Join(got, ",") != "SingleNodeConsolidation["+a+"]" {
					t.Fatalf("actions %v, want the unpriced node consolidated; skips: %+v", got, plan.Skipped)
				}
				return
			}
			if got := summaries(plan); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("actions %v, want %v\nskips: %+v", got, tt.want, plan.Skipped)
			}
			if tt.wantSkip == "" {
				return
			}
			found := false
			for _, sk := range plan.Skipped {
				found = found || sk.Reason == tt.wantSkip && strings.Contains(sk.Message, "saves nothing")
			}
			if !found {
				t.Fatalf("skips %+v, want a %s that says deleting saves nothing", plan.Skipped, tt.wantSkip)
			}
		})
	}
}
