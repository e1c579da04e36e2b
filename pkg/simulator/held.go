package simulator

import (
	"cmp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// held follows why the disruption planner leaves nodes. It does not
// judge nodes itself: it reads the counts the disruption controller
// publishes from its latest plan's skips (nodesmith_disruption_skipped_nodes,
// one per pkg/disruption.SkipReason), as a user's dashboard would.
type held struct {
	skipped *prometheus.GaugeVec
	byWhy   map[string]*output.Held
	// last are the counts at the previous sample, at lastAt.
	last   map[string]int
	lastAt time.Duration
}

func newHeld(m *metrics.Metrics) *held {
	return &held{skipped: m.Disruption.Skipped, byWhy: map[string]*output.Held{}}
}

// sample records the counts at now: the previous counts held from the
// previous sample until now.
func (h *held) sample(now time.Duration) {
	counts := h.read()
	for why, n := range h.last {
		h.byWhy[why].NodeTime += time.Duration(n) * (now - h.lastAt)
	}
	for why, n := range counts {
		r := h.byWhy[why]
		if r == nil {
			r = &output.Held{Reason: why}
			h.byWhy[why] = r
		}
		if n > r.Most {
			r.Most, r.MostAt = n, now
		}
	}
	for _, r := range h.byWhy {
		r.AtEnd = counts[r.Reason]
	}
	h.last, h.lastAt = counts, now
}

// read is the latest plan's skipped nodes per reason (reasons with none
// left out).
func (h *held) read() map[string]int {
	ch := make(chan prometheus.Metric)
	go func() {
		h.skipped.Collect(ch)
		close(ch)
	}()
	counts := map[string]int{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil || d.GetGauge().GetValue() <= 0 {
			continue
		}
		for _, l := range d.GetLabel() {
			if l.GetName() == metrics.LabelSkipReason {
				counts[l.GetValue()] = int(d.GetGauge().GetValue())
			}
		}
	}
	return counts
}

// result is every reason that held a node, most node-time first.
func (h *held) result() []output.Held {
	var out []output.Held
	for _, r := range h.byWhy {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b output.Held) int {
		return cmp.Or(cmp.Compare(b.NodeTime, a.NodeTime), cmp.Compare(b.Most, a.Most), cmp.Compare(a.Reason, b.Reason))
	})
	return out
}
