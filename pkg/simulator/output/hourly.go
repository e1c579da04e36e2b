package output

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// Hour is one row of the hourly table of a run longer than an hour: what
// Nodesmith did in the hour and what it cost against a fresh plan of the
// hour's pods.
type Hour struct {
	// Start of the hour (t); the last hour of a run may be shorter (End).
	Start, End time.Duration
	// Launches are the instances Nodesmith launched in the hour, Deletions
	// those that stopped in it (for any reason, interruptions included).
	Launches, Deletions int
	// Evictions are the pods the Eviction API let go in the hour (a drain
	// retried for the same pod counts once).
	Evictions int
	// Cost is what Nodesmith's instances cost in the hour (USD), system
	// nodes excluded.
	Cost float64
	// Fresh is what a fresh plan of the hour's pods costs over the hour
	// (USD): the solver's plan for the workload pods wanted at each
	// 5-minute mark of the hour, on an empty cluster from the run's
	// NodePools (simulator.FreshPlan), its $/h averaged over the marks.
	Fresh float64
	// FreshSamples is how many marks Fresh averages.
	FreshSamples int
	// PodsMin and PodsMax are the fewest and most workload pods wanted at
	// the samples from SettleBefore before the hour to its end (the
	// sample at the end belongs to the next hour).
	PodsMin, PodsMax int
	// Events are the scenario's events and the workloads' schedule changes
	// from SettleBefore before the hour to its end, in time order
	// ("1h30m spotInterruption").
	Events []string
	// Quiet: no event in Events and PodsMax at most QuietLoadChange above
	// PodsMin (see IsQuiet).
	Quiet bool
	// Churn is the most instances of one (pool, instance type) launched in
	// the hour and removed in it by Nodesmith's own decision (not an
	// interruption), ChurnOf which; the launch/delete loop goal wants it
	// at most 2.
	Churn   int
	ChurnOf string
}

// SettleBefore is how long before an hour an event or a load change still
// disqualifies it from being quiet: the fleet's answer to it (a
// replacement launched, an empty node waiting consolidateAfter, a drift
// roll within the budget) takes minutes.
const SettleBefore = 30 * time.Minute

// QuietLoadChange is the largest change in wanted workload pods (a share
// of the fewest) a quiet hour may see.
const QuietLoadChange = 0.05

// IsQuiet is the quiet-hour rule: no scenario event or workload schedule
// change in the hour or the SettleBefore before it, and the wanted pods
// within QuietLoadChange of their fewest.
func IsQuiet(events int, podsMin, podsMax int) bool {
	return events == 0 && float64(podsMax-podsMin) <= QuietLoadChange*float64(podsMin)
}

// Ratio is Cost over Fresh (0 when there is no fresh plan to compare with).
func (h Hour) Ratio() float64 {
	if h.Fresh == 0 {
		return 0
	}
	return h.Cost / h.Fresh
}

// HourlyHeader names the hourly table's columns.
const HourlyHeader = "hour,start_s,end_s,launches,deletions,evictions,cost_usd,fresh_usd,ratio,pods_min,pods_max,quiet,churn,churn_of,events"

// WriteHourlyCSV writes the hourly table, fixed precision so the same run
// gives the same bytes.
func WriteHourlyCSV(w io.Writer, hours []Hour) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, HourlyHeader)
	for i, h := range hours {
		fmt.Fprintf(bw, "%d,%d,%d,%d,%d,%d,%.4f,%.4f,%.3f,%d,%d,%t,%d,%s,%s\n", i, int64(h.Start.Seconds()), int64(h.End.Seconds()),
			h.Launches, h.Deletions, h.Evictions, h.Cost, h.Fresh, h.Ratio(), h.PodsMin, h.PodsMax, h.Quiet, h.Churn, h.ChurnOf,
			strings.Join(h.Events, ";"))
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing hourly table: %w", err)
	}
	return nil
}

// writeHourly is report.md's hourly section.
func writeHourly(p func(string, ...any), hours []Hour) {
	if len(hours) == 0 {
		return
	}
	p("## Hour by hour\n\nPer hour of virtual time (also in `hourly.csv`): instances launched and stopped, pods evicted, what Nodesmith's instances cost in the hour, and what a fresh plan of the hour's pods would cost (the solver's plan on an empty cluster at each 5-minute mark, averaged). ")
	p("An hour is quiet when neither it nor the %s before it has a scenario event or a workload schedule change and the wanted pods vary by at most %.0f %%. Churn is the most instances of one pool and type launched and removed by Nodesmith within the hour.\n\n",
		FormatDuration(SettleBefore), 100*QuietLoadChange)
	p("| hour | t | launches | deletions | evictions | cost | fresh plan | ratio | pods | quiet | churn | events |\n|---:|---|---:|---:|---:|---:|---:|---:|---|---|---:|---|\n")
	for i, h := range hours {
		pods := fmt.Sprintf("%d", h.PodsMin)
		if h.PodsMax != h.PodsMin {
			pods = fmt.Sprintf("%d–%d", h.PodsMin, h.PodsMax)
		}
		quiet := ""
		if h.Quiet {
			quiet = "quiet"
		}
		ev := strings.Join(h.Events, ", ")
		if ev == "" {
			ev = "-"
		}
		p("| %d | %s | %d | %d | %d | $%.4f | $%.4f | %.2f | %s | %s | %d | %s |\n", i, FormatDuration(h.Start), h.Launches, h.Deletions, h.Evictions,
			h.Cost, h.Fresh, h.Ratio(), pods, quiet, h.Churn, ev)
	}
	p("\n")
}
