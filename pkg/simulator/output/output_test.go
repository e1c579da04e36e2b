package output

import (
	"bytes"
	"image/png"
	"strings"
	"testing"
	"time"
)

func testResult() *Result {
	return &Result{
		Scenario: "lab", Seed: 7, Duration: 10 * time.Minute,
		Samples: []Sample{
			{T: 0, QueueVisible: 1000, DesiredReplicas: 20, PendingPods: 20, NodesOnDemand: 2, CostPerHour: 0.192},
			{T: 5 * time.Second, QueueVisible: 990, QueueInFlight: 10, DesiredReplicas: 20, RunningPods: 10, PendingPods: 10, NodesSpot: 3, NodesOnDemand: 2, CostPerHour: 0.31234567},
		},
		Launches: []Launch{
			{NodeClaim: "spot-00001", Pool: "spot", InstanceType: "c6g.xlarge", Zone: "us-east-1a", CapacityType: "spot", Price: 0.05, OnDemandPrice: 0.136, LaunchedAt: 0, TerminatedAt: time.Hour, Terminated: true, Reason: "empty", Cost: 0.05},
			{NodeClaim: "spot-00002", Pool: "spot", InstanceType: "c6g.xlarge", Zone: "us-east-1a", CapacityType: "spot", Price: 0.05, OnDemandPrice: 0.136, LaunchedAt: 0, TerminatedAt: 30 * time.Minute, Terminated: true, Reason: "empty", Cost: 0.025},
			{NodeClaim: "spot-00003", Pool: "spot", InstanceType: "m7i.large", Zone: "us-east-1b", CapacityType: "on-demand", Price: 0.1008, OnDemandPrice: 0.1008, LaunchedAt: time.Minute, TerminatedAt: 10 * time.Minute},
		},
		Cost: 0.075, OnDemandCost: 0.3, QueueEmpty: Milestone{At: 5*time.Minute + 300*time.Millisecond, Reached: true},
		LaunchFailures: map[string]int{"insufficient capacity": 2},
		NotDisrupted: []Held{
			{Reason: "PodDisruptionBudget", Most: 4, MostAt: 2 * time.Minute, NodeTime: 90 * time.Minute, AtEnd: 0},
			{Reason: "NoCheaperReplacement", Most: 2, MostAt: 3 * time.Minute, NodeTime: 15 * time.Minute, AtEnd: 2},
		},
	}
}

func TestWriteCSV(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCSV(&b, testResult().Samples); err != nil {
		t.Fatal(err)
	}
	want := CSVHeader + "\n" +
		"0,1000,0,20,0,20,0,2,0.1920\n" +
		"5,990,10,20,10,10,3,2,0.3123\n"
	if got := b.String(); got != want {
		t.Errorf("csv =\n%s\nwant\n%s", got, want)
	}
}

func TestWriteReport(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReport(&b, testResult()); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"| nodes launched | 3 |",
		"| instance types | c6g.xlarge, m7i.large |",
		"| time to queue empty | 5m0s |",
		"| time back to base (no Nodesmith node left) | not reached |",
		"| saving | 75.0% |",
		"| c6g.xlarge | us-east-1a | spot | 2 | 0.0500 | 0.1360 | 1.500 | $0.0750 |",
		"| insufficient capacity | 2 |",
		"| spot-00003 | spot | m7i.large | us-east-1b | on-demand | 1m0s | still running |  |",
		"## Why nodes were not disrupted",
		"| PodDisruptionBudget | 4 | 2m0s | 1.500 | 0 |",
		"| NoCheaperReplacement | 2 | 3m0s | 0.250 | 2 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

func TestWriteSummary(t *testing.T) {
	var b bytes.Buffer
	WriteSummary(&b, testResult())
	if got := b.String(); !strings.Contains(got, "nodes launched  3 (c6g.xlarge, m7i.large)") || !strings.Contains(got, "75.0% saved") ||
		!strings.Contains(got, "not disrupted   NoCheaperReplacement 2 (") || strings.Contains(got, "PodDisruptionBudget") {
		t.Errorf("summary = %s", got)
	}
}

func TestWritePNG(t *testing.T) {
	var b bytes.Buffer
	if err := WritePNG(&b, "lab", testResult().Samples); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatalf("decoding chart: %v", err)
	}
	if got := img.Bounds().Size(); got.X != 1200 || got.Y != 1000 {
		t.Errorf("chart size = %v, want 1200x1000", got)
	}
}

func TestStepTicks(t *testing.T) {
	tests := []struct {
		name   string
		ticks  stepTicks
		lo, hi float64
		want   []string
	}{
		{name: "twenty minutes", ticks: stepTicks{target: 12, integer: true}, lo: 0, hi: 20, want: []string{"0", "2", "4", "6", "8", "10", "12", "14", "16", "18", "20"}},
		{name: "small counts stay whole", ticks: stepTicks{target: 5, integer: true}, lo: 0, hi: 2.6, want: []string{"0", "1", "2"}},
		{name: "dollars", ticks: stepTicks{target: 5}, lo: 0, hi: 0.39, want: []string{"0", "0.1", "0.2", "0.3"}},
		{name: "messages", ticks: stepTicks{target: 5}, lo: 0, hi: 1300, want: []string{"0", "200", "400", "600", "800", "1000", "1200"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, tk := range tt.ticks.Ticks(tt.lo, tt.hi) {
				if tk.Label != "" {
					got = append(got, tk.Label)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("labels = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsQuiet(t *testing.T) {
	for _, tt := range []struct {
		events, lo, hi int
		want           bool
	}{
		{0, 4, 4, true},
		{0, 20, 21, true},  // 5 %
		{0, 20, 22, false}, // 10 %
		{1, 4, 4, false},   // an event
		{0, 0, 0, true},    // no load at all
		{0, 0, 1, false},
	} {
		if got := IsQuiet(tt.events, tt.lo, tt.hi); got != tt.want {
			t.Errorf("IsQuiet(%d events, %d..%d pods) = %t, want %t", tt.events, tt.lo, tt.hi, got, tt.want)
		}
	}
}

func TestWriteHourlyCSV(t *testing.T) {
	hours := []Hour{
		{Start: 0, End: time.Hour, Launches: 3, Cost: 0.5, Fresh: 0.4, PodsMin: 12, PodsMax: 32, Events: []string{"0s web→12", "0s sendMessages"}},
		{Start: time.Hour, End: 90 * time.Minute, Cost: 0.1, PodsMin: 4, PodsMax: 4, Quiet: true, Churn: 1, ChurnOf: "general/c6g.large"},
	}
	var b strings.Builder
	if err := WriteHourlyCSV(&b, hours); err != nil {
		t.Fatal(err)
	}
	want := HourlyHeader + "\n" +
		"0,0,3600,3,0,0,0.5000,0.4000,1.250,12,32,false,0,,0s web→12;0s sendMessages\n" +
		"1,3600,5400,0,0,0,0.1000,0.0000,0.000,4,4,true,1,general/c6g.large,\n"
	if b.String() != want {
		t.Errorf("hourly.csv:\n%s\nwant:\n%s", b.String(), want)
	}
}

// The comparison's sentence says which run paid more, by the totals paid
// (launched − covered + commitments + reservations).
func TestCommitmentVerdict(t *testing.T) {
	run := func(cost, covered, commitments, reservations float64) *Result {
		return &Result{Cost: cost, CommitmentCovered: covered, CommitmentCost: commitments, ReservationCost: reservations}
	}
	tests := []struct {
		name              string
		honoured, ignored *Result
		want              string
	}{
		{"ignoring costs more", run(2, 1.5, 2, 3), run(2.5, 1, 2, 3), "Ignoring them costs $1.0000 more over the run (18.2 % more than honouring them)."},
		{"ignoring costs less", run(3, 0, 1, 0), run(2, 0, 1, 0), "Ignoring them costs $1.0000 less over the run (25.0 % less than honouring them)."},
		{"the same", run(1, 0, 1, 1), run(1, 0, 1, 1), "Both runs cost the same."},
		{"nothing paid", run(0, 0, 0, 0), run(1, 0, 0, 0), "Honoured they cost $0.0000, ignored $1.0000."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CommitmentVerdict(tt.honoured, tt.ignored); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
