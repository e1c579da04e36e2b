package simulator

import (
	"sort"
	"strings"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// commitmentCost is what the scenario's commitments (Savings Plans, RIs)
// cost over the run — their hourly amount for its whole duration, paid
// whether used or not — and how much of the launched on-demand instances'
// cost they covered. Between any two launch or termination instants the
// running on-demand instances are charged, in launch order, to a fresh
// ledger (catalog.Ledger, the solver's own rule: scoped commitments first,
// then compute, each up to its hourly amount).
func commitmentCost(cs []catalog.Commitment, region string, launches []output.Launch, end time.Duration) (paid, covered float64) {
	if len(cs) == 0 {
		return 0, 0
	}
	for _, c := range cs {
		paid += c.Hourly * end.Hours()
	}
	var od []output.Launch
	cuts := []time.Duration{0, end}
	for _, l := range launches {
		if l.CapacityType == nsv1.CapacityTypeOnDemand {
			od = append(od, l)
			cuts = append(cuts, l.LaunchedAt, l.TerminatedAt)
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i] < cuts[j] })
	for i := 1; i < len(cuts); i++ {
		from, to := cuts[i-1], cuts[i]
		if to <= from {
			continue
		}
		ledger := catalog.NewLedger(cs)
		for _, l := range od {
			if l.LaunchedAt <= from && l.TerminatedAt >= to {
				family, _, _ := strings.Cut(l.InstanceType, ".")
				covered += ledger.Charge(family, region, l.Price) * (to - from).Hours()
			}
		}
	}
	return paid, covered
}
