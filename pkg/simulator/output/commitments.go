package output

import (
	"bufio"
	"fmt"
	"io"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// ByCapacityType counts the launches by capacity type.
func ByCapacityType(ls []Launch) (reserved, onDemand, spot int) {
	for _, l := range ls {
		switch l.CapacityType {
		case nsv1.CapacityTypeReserved:
			reserved++
		case nsv1.CapacityTypeSpot:
			spot++
		default:
			onDemand++
		}
	}
	return reserved, onDemand, spot
}

// WriteCommitmentComparison writes the report section that puts a run
// beside the same run with its capacity reservations and commitments
// ignored (simulator.Options.IgnoreCommitments): what each launched and
// what each cost the account, which pays the reservations and commitments
// in both.
func WriteCommitmentComparison(w io.Writer, honoured, ignored *Result) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	p("\n## Commitments honoured and ignored\n\n")
	p("The same scenario and seed run twice through the same controllers: as written, and as a provisioner that ignores what the account already pays for " +
		"(the node classes select no capacity reservation, no Commitment object exists). The account holds and pays for both in both runs: " +
		"every instance a capacity reservation or Capacity Block holds is charged at its type's on-demand price from the start to the reservation's end, " +
		"used or not, and an instance launched into one costs nothing more; a commitment is charged its hourly amount for the whole run and covers " +
		"on-demand usage at list price up to that amount, whichever run launched it, as AWS applies a Savings Plan to whatever on-demand runs. " +
		"So the run that ignores them pays for the idle reservations and for the capacity it buys instead.\n\n")
	p("| | honoured | ignored |\n|---|---:|---:|\n")
	hr, hod, hs := ByCapacityType(honoured.Launches)
	ir, iod, is := ByCapacityType(ignored.Launches)
	p("| nodes launched: reserved / on-demand / spot | %d / %d / %d | %d / %d / %d |\n", hr, hod, hs, ir, iod, is)
	p("| time to all pods running | %s | %s |\n", honoured.AllPodsRunning, ignored.AllPodsRunning)
	p("| launched instances at their price | $%.4f | $%.4f |\n", honoured.Cost, ignored.Cost)
	p("| on-demand the commitments covered | −$%.4f | −$%.4f |\n", honoured.CommitmentCovered, ignored.CommitmentCovered)
	p("| commitments (paid whether used or not) | $%.4f | $%.4f |\n", honoured.CommitmentCost, ignored.CommitmentCost)
	p("| capacity reservations (paid whether used or not) | $%.4f | $%.4f |\n", honoured.ReservationCost, ignored.ReservationCost)
	p("| **total paid** | **$%.4f** | **$%.4f** |\n\n", honoured.Total(), ignored.Total())
	p("%s\n\n", CommitmentVerdict(honoured, ignored))
	return bw.Flush()
}

// CommitmentVerdict says in one sentence what ignoring the commitments
// cost (or saved).
func CommitmentVerdict(honoured, ignored *Result) string {
	h, i := honoured.Total(), ignored.Total()
	switch {
	case h <= 0 || i <= 0:
		return fmt.Sprintf("Honoured they cost $%.4f, ignored $%.4f.", h, i)
	case i > h:
		return fmt.Sprintf("Ignoring them costs $%.4f more over the run (%.1f %% more than honouring them).", i-h, 100*(i/h-1))
	case i < h:
		return fmt.Sprintf("Ignoring them costs $%.4f less over the run (%.1f %% less than honouring them).", h-i, 100*(1-i/h))
	}
	return "Both runs cost the same."
}
