package output

import (
	"bufio"
	"fmt"
	"io"
)

// CSVHeader names the timeline columns.
const CSVHeader = "t_s,queue_visible,queue_in_flight,desired_replicas,running_pods,pending_pods,nodes_spot,nodes_on_demand,cost_usd_per_hour"

// WriteCSV writes the timeline. Values are formatted with fixed precision so
// the same run gives the same bytes.
func WriteCSV(w io.Writer, samples []Sample) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, CSVHeader)
	for _, s := range samples {
		fmt.Fprintf(bw, "%d,%d,%d,%d,%d,%d,%d,%d,%.4f\n", int64(s.T.Seconds()), s.QueueVisible, s.QueueInFlight,
			s.DesiredReplicas, s.RunningPods, s.PendingPods, s.NodesSpot, s.NodesOnDemand, s.CostPerHour)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing timeline: %w", err)
	}
	return nil
}
