package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodesmith/nodesmith/examples/scenarios"
	"github.com/nodesmith/nodesmith/pkg/cost"
	"github.com/nodesmith/nodesmith/pkg/simulator"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

func newSimulateCommand() *cobra.Command {
	var (
		file    string
		out     string
		seed    int64
		compare bool
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Replay a scenario in virtual time and write timeline.csv, timeline.png and report.md",
		Long: `simulate runs a scenario (by default the built-in sqs-worker-lab) through
Nodesmith's batching window, solver, AWS provider and lifecycle rules against a
simulated AWS, in virtual time. It writes the timeline as CSV and as a chart,
a Markdown report, and prints a summary. The same scenario and seed always
give the same CSV.

--scenario takes a file path or the name of a built-in example
(` + exampleNames() + `).

--compare-commitments runs the scenario a second time as a provisioner that
ignores the account's capacity reservations and commitments (the node classes
select no reservation, no Commitment object exists; the account still pays
for them), writes that run's outputs into DIR/ignored and puts both runs side
by side at the end of report.md.`,
		Example: `  # the default scenario into ./out
  nodesmith simulate

  # a built-in scenario by name, another seed
  nodesmith simulate --scenario ice-window --seed 7 --out /tmp/ice

  # your own scenario file
  nodesmith simulate --scenario my-scenario.yaml

  # reservations, a Capacity Block and a Savings Plan, against the same run ignoring them
  nodesmith simulate --scenario commitments --compare-commitments`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sc, err := loadScenario(file)
			if err != nil {
				return err
			}
			opts := simulator.Options{}
			if cmd.Flags().Changed("seed") {
				opts.Seed = &seed
			}
			if !compare {
				return runSimulation(cmd.Context(), cmd.OutOrStdout(), sc, out, opts)
			}
			return compareCommitments(cmd.Context(), cmd.OutOrStdout(), sc, out, opts)
		},
	}
	cmd.Flags().StringVar(&file, "scenario", "", "scenario file or built-in example name (default "+scenarios.Default+")")
	cmd.Flags().StringVar(&out, "out", "out", "directory to write timeline.csv, timeline.png and report.md into")
	cmd.Flags().Int64Var(&seed, "seed", 0, "random seed (default: the scenario's)")
	cmd.Flags().BoolVar(&compare, "compare-commitments", false, "also run the scenario ignoring its capacity reservations and commitments (outputs in DIR/ignored) and compare the two in report.md")
	return cmd
}

// compareCommitments runs sc as written and as a provisioner that ignores
// its capacity reservations and commitments, writes each run's outputs
// (the second into dir/ignored) and appends the comparison to the first
// run's report.md.
func compareCommitments(ctx context.Context, stdout io.Writer, sc *scenario.Scenario, dir string, opts simulator.Options) error {
	if len(sc.World.CapacityReservations) == 0 && len(sc.Commitments) == 0 {
		return fmt.Errorf("scenario %s has no capacity reservations and no commitments: --compare-commitments would run it twice the same", sc.Name)
	}
	honoured, err := simulate(ctx, stdout, sc, dir, opts)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "ignoring the capacity reservations and commitments:")
	opts.IgnoreCommitments = true
	ignored, err := simulate(ctx, stdout, sc, filepath.Join(dir, "ignored"), opts)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "report.md")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	err = output.WriteCommitmentComparison(f, honoured, ignored)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fmt.Fprintf(stdout, "total paid        honoured $%.4f, ignored $%.4f. %s\n  compared in     %s\n",
		honoured.Total(), ignored.Total(), output.CommitmentVerdict(honoured, ignored), path)
	return nil
}

// loadScenario reads a file, or a built-in example when no file of that name exists.
func loadScenario(name string) (*scenario.Scenario, error) {
	if name == "" {
		name = scenarios.Default
	}
	if _, err := os.Stat(name); err == nil {
		return scenario.LoadFile(name)
	}
	builtin := filepath.Base(name)
	if filepath.Ext(builtin) == "" {
		builtin += ".yaml" // "ice-window" names examples/scenarios/ice-window.yaml
	}
	b, err := scenarios.Read(builtin)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("scenario %q: no such file and no built-in example of that name (built-in: %s)", name, exampleNames())
		}
		return nil, fmt.Errorf("reading built-in scenario %s: %w", name, err)
	}
	sc, err := scenario.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("built-in scenario %s: %w", name, err)
	}
	return sc, nil
}

func exampleNames() string {
	return strings.Join(scenarios.Names(), ", ")
}

func runSimulation(ctx context.Context, stdout io.Writer, sc *scenario.Scenario, dir string, opts simulator.Options) error {
	_, err := simulate(ctx, stdout, sc, dir, opts)
	return err
}

// simulate runs sc, writes its outputs into dir and its summary on stdout.
func simulate(ctx context.Context, stdout io.Writer, sc *scenario.Scenario, dir string, opts simulator.Options) (*output.Result, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating output directory: %w", err)
	}
	tty := isTerminal(stdout)
	if tty {
		opts.Progress = func(s output.Sample) {
			fmt.Fprintf(stdout, "\r  t=%-8s queue %5d  pods %4d running %4d pending  nodes %3d spot %3d on-demand  $%.3f/h ",
				output.FormatDuration(s.T), s.QueueVisible+s.QueueInFlight, s.RunningPods, s.PendingPods, s.NodesSpot, s.NodesOnDemand, s.CostPerHour)
		}
	}
	start := time.Now()
	res, err := simulator.Run(ctx, sc, opts)
	if tty {
		fmt.Fprint(stdout, "\r\033[K")
	}
	if err != nil {
		return nil, fmt.Errorf("simulating %s: %w", sc.Name, err)
	}
	wall := time.Since(start)
	if err := writeOutputs(dir, res); err != nil {
		return nil, err
	}
	output.WriteSummary(stdout, res)
	if at, b := peakFleet(res); b.Nodes > 0 {
		fmt.Fprintf(stdout, "  fleet at peak   %s/h at %s, at launch prices:\n", dollars(b.PerHour), output.FormatDuration(at))
		writeBreakdown(stdout, "    ", b)
	}
	files := "{timeline.csv,timeline.png,report.md}"
	if len(res.Hours) > 0 {
		files = "{timeline.csv,timeline.png,report.md,hourly.csv}"
	}
	fmt.Fprintf(stdout, "  simulated in    %s wall; wrote %s\n", wall.Round(time.Millisecond), filepath.Join(dir, files))
	return res, nil
}

func writeOutputs(dir string, res *output.Result) error {
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{"timeline.csv", func(w io.Writer) error { return output.WriteCSV(w, res.Samples) }},
		{"timeline.png", func(w io.Writer) error { return output.WritePNG(w, res.Scenario, res.Samples) }},
		{"report.md", func(w io.Writer) error { return output.WriteReport(w, res) }},
	}
	if len(res.Hours) > 0 {
		files = append(files, struct {
			name  string
			write func(io.Writer) error
		}{"hourly.csv", func(w io.Writer) error { return output.WriteHourlyCSV(w, res.Hours) }})
	}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		fh, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("creating %s: %w", path, err)
		}
		err = f.write(fh)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// peakFleet is the fleet when it cost the most, by pool, capacity type and
// instance type at launch prices: the figures plan prints for a cluster.
func peakFleet(res *output.Result) (time.Duration, cost.Breakdown) {
	var at time.Duration
	best := -1.0
	for _, s := range res.Samples {
		if s.CostPerHour > best {
			at, best = s.T, s.CostPerHour
		}
	}
	var items []cost.Item
	for _, l := range res.Launches {
		if l.LaunchedAt <= at && (at < l.TerminatedAt || !l.Terminated) {
			items = append(items, cost.Item{NodePool: l.Pool, CapacityType: l.CapacityType, InstanceType: l.InstanceType, PerHour: l.Price})
		}
	}
	return at, cost.Sum(items)
}

// isTerminal reports whether w is a character device (an interactive terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
