package output

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// launchGroup is the launches of one (type, zone, capacity type, price).
type launchGroup struct {
	InstanceType, Zone, CapacityType string
	Price, OnDemandPrice             float64
	Count                            int
	Hours, Cost                      float64
}

func groupLaunches(ls []Launch) []launchGroup {
	idx := map[string]int{}
	var out []launchGroup
	for _, l := range ls {
		key := fmt.Sprintf("%s|%s|%s|%.6f", l.InstanceType, l.Zone, l.CapacityType, l.Price)
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, launchGroup{InstanceType: l.InstanceType, Zone: l.Zone, CapacityType: l.CapacityType, Price: l.Price, OnDemandPrice: l.OnDemandPrice})
		}
		out[i].Count++
		out[i].Hours += l.Hours()
		out[i].Cost += l.Cost
	}
	slices.SortFunc(out, func(a, b launchGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.InstanceType, b.InstanceType),
			cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.CapacityType, b.CapacityType))
	})
	return out
}

// Savings is the share of the on-demand cost not paid, in percent.
func (r *Result) Savings() float64 {
	if r.OnDemandCost == 0 {
		return 0
	}
	return 100 * (1 - r.Cost/r.OnDemandCost)
}

// InstanceTypes are the distinct launched types, sorted.
func (r *Result) InstanceTypes() []string {
	var ts []string
	for _, l := range r.Launches {
		ts = append(ts, l.InstanceType)
	}
	slices.Sort(ts)
	return slices.Compact(ts)
}

// WriteReport writes report.md.
func WriteReport(w io.Writer, r *Result) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	p("# Simulation report: %s\n\n", r.Scenario)
	if r.Description != "" {
		p("%s\n\n", strings.TrimSpace(r.Description))
	}
	p("Seed %d, %s of virtual time. The timeline is in `timeline.csv` and drawn in `timeline.png`.\n\n", r.Seed, FormatDuration(r.Duration))

	p("## Key figures\n\n| figure | value |\n|---|---|\n")
	p("| nodes launched | %d |\n", len(r.Launches))
	p("| instance types | %s |\n", strings.Join(r.InstanceTypes(), ", "))
	p("| pods created | %d |\n", r.PodsCreated)
	p("| time to first new pod running | %s |\n", r.FirstPodRunning)
	p("| time to all pods running | %s |\n", r.AllPodsRunning)
	p("| time to queue empty | %s |\n", r.QueueEmpty)
	p("| time back to base (no Nodesmith node left) | %s |\n", r.BackToBase)
	p("| cost of launched nodes | $%.4f |\n", r.Cost)
	p("| same instance types and hours on demand | $%.4f |\n", r.OnDemandCost)
	p("| saving | %.1f%% |\n", r.Savings())
	p("| system nodes over the run | $%.4f |\n", r.SystemCost)
	if r.ReservationCost > 0 {
		p("| capacity reservations over the run (paid whether used or not) | $%.4f |\n", r.ReservationCost)
	}
	if r.CommitmentCost > 0 {
		p("| commitments over the run (paid whether used or not) | $%.4f |\n", r.CommitmentCost)
		p("| on-demand cost the commitments covered | $%.4f |\n", r.CommitmentCovered)
	}
	if r.ReservationCost > 0 || r.CommitmentCost > 0 {
		p("| total paid (launched − covered + commitments + reservations) | $%.4f |\n", r.Total())
	}
	p("\n")

	p("## What was launched\n\n")
	if len(r.Launches) == 0 {
		p("Nothing.\n\n")
	} else {
		p("| instance type | zone | capacity type | count | $/h | on-demand $/h | node-hours | cost |\n|---|---|---|---:|---:|---:|---:|---:|\n")
		for _, g := range groupLaunches(r.Launches) {
			p("| %s | %s | %s | %d | %.4f | %.4f | %.3f | $%.4f |\n", g.InstanceType, g.Zone, g.CapacityType, g.Count, g.Price, g.OnDemandPrice, g.Hours, g.Cost)
		}
		p("\n")
	}
	if len(r.LaunchFailures) > 0 {
		p("## Launch failures\n\n| reason | count |\n|---|---:|\n")
		keys := make([]string, 0, len(r.LaunchFailures))
		for k := range r.LaunchFailures {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p("| %s | %d |\n", k, r.LaunchFailures[k])
		}
		p("\n")
	}
	if len(r.Notes) > 0 {
		p("## Decisions worth a look\n\n")
		for _, n := range r.Notes {
			p("- %s\n", n)
		}
		p("\n")
	}
	writeHourly(p, r.Hours)
	writeInterruptions(p, r.Interruptions)
	writeNotDisrupted(p, r.NotDisrupted)
	writeStillPending(p, r.StillPending)
	p("## Nodes\n\n| nodeclaim | pool | type | zone | capacity | launched | gone | why |\n|---|---|---|---|---|---|---|---|\n")
	for _, l := range r.Launches {
		gone := "still running"
		if l.Terminated {
			gone = FormatDuration(l.TerminatedAt)
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s |\n", l.NodeClaim, l.Pool, l.InstanceType, l.Zone, l.CapacityType, FormatDuration(l.LaunchedAt), gone, l.Reason)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// writeInterruptions lists each notice with its replacement.
func writeInterruptions(p func(string, ...any), list []Interruption) {
	if len(list) == 0 {
		return
	}
	p("## Interruption notices\n\nEach notice about a Nodesmith node, where its pods were planned, when that capacity was ready and when the node was drained. Stranded pods left the node before a ready place was waiting for them.\n\n")
	p("| notice | kind | nodeclaim | instance | pods | deadline | replacement | planned | ready | drained | why | stranded |\n|---|---|---|---|---:|---|---|---|---|---|---|---:|\n")
	for _, in := range list {
		var repl []string
		for _, r := range in.Replacements {
			if r.NewNode {
				repl = append(repl, fmt.Sprintf("%d on new %s (%s, launched %s)", r.Pods, r.Target, r.InstanceType, r.Launched))
			} else {
				repl = append(repl, fmt.Sprintf("%d on running %s", r.Pods, r.Target))
			}
		}
		if len(repl) == 0 {
			repl = []string{"none planned"}
		}
		why := in.DrainReason
		if why == "" {
			why = "-"
		}
		deadline := "-"
		if in.Deadline.Reached {
			deadline = in.Deadline.String()
		}
		p("| %s | %s | %s | %s (%s, %s) | %d | %s | %s | %s | %s | %s | %s | %d |\n", FormatDuration(in.At), in.Kind, in.NodeClaim,
			in.Instance, in.InstanceType, in.Zone, in.Pods, deadline, strings.Join(repl, "; "), in.Planned, in.ReplacementReady(), in.Drained, why, in.Stranded)
	}
	p("\n")
}

// writeNotDisrupted lists the disruption planner's reasons for leaving
// nodes.
func writeNotDisrupted(p func(string, ...any), list []Held) {
	if len(list) == 0 {
		return
	}
	p("## Why nodes were not disrupted\n\nThe disruption planner's own reasons for leaving nodes (one reason per node, the first it found), as its latest plan counted them at each sample: the most nodes held at once, the node-hours held over the run, and the nodes held at the end.\n\n")
	p("| reason | most nodes | first at | node-hours | at the end |\n|---|---:|---|---:|---:|\n")
	for _, h := range list {
		p("| %s | %d | %s | %.3f | %d |\n", h.Reason, h.Most, FormatDuration(h.MostAt), h.NodeTime.Hours(), h.AtEnd)
	}
	p("\n")
}

// WriteSummary writes the few lines printed on stdout at the end of a run.
func WriteSummary(w io.Writer, r *Result) {
	fmt.Fprintf(w, "scenario %s (seed %d, %s virtual)\n", r.Scenario, r.Seed, FormatDuration(r.Duration))
	fmt.Fprintf(w, "  nodes launched  %d (%s)\n", len(r.Launches), strings.Join(r.InstanceTypes(), ", "))
	fmt.Fprintf(w, "  first pod       %s\n  all pods        %s\n  queue empty     %s\n  back to base    %s\n",
		r.FirstPodRunning, r.AllPodsRunning, r.QueueEmpty, r.BackToBase)
	fmt.Fprintf(w, "  cost            $%.4f (on demand $%.4f, %.1f%% saved)\n", r.Cost, r.OnDemandCost, r.Savings())
	if r.ReservationCost > 0 {
		fmt.Fprintf(w, "  reservations    $%.4f (paid whether used or not)\n", r.ReservationCost)
	}
	if r.CommitmentCost > 0 {
		fmt.Fprintf(w, "  commitments     $%.4f (paid whether used or not), covering $%.4f of on-demand\n", r.CommitmentCost, r.CommitmentCovered)
	}
	if r.ReservationCost > 0 || r.CommitmentCost > 0 {
		fmt.Fprintf(w, "  total paid      $%.4f (launched − covered + commitments + reservations)\n", r.Total())
	}
	var held []string
	for _, h := range r.NotDisrupted {
		if h.AtEnd > 0 {
			held = append(held, fmt.Sprintf("%s %d", h.Reason, h.AtEnd))
		}
	}
	if len(held) > 0 {
		fmt.Fprintf(w, "  not disrupted   %s (nodes the last plan left, by why)\n", strings.Join(held, ", "))
	}
}

// writeStillPending lists the pods left Pending at the end, each group with
// its reason in full: a reason is never cut, however long.
func writeStillPending(p func(string, ...any), list []PendingGroup) {
	if len(list) == 0 {
		return
	}
	p("## Pods still Pending at the end\n\nEvery workload pod not running when the run ended, grouped by the last reason Nodesmith gave for it (its Warning Event, in full).\n\n")
	p("| pods | examples | reason |\n|---:|---|---|\n")
	for _, g := range list {
		why := g.Reason
		if why == "" {
			why = "no Warning from Nodesmith (not yet judged unschedulable, or waiting for a node being launched)"
		}
		p("| %d | %s | %s |\n", g.Pods, strings.Join(g.Examples, ", "), cell(why))
	}
	p("\n")
}

// cell makes text safe inside a markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}
