package simulator

import (
	"cmp"
	"slices"
	"time"

	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// observe records the milestones reached at the end of an instant.
func (s *Sim) observe() {
	desired := s.desired()
	if !s.allPodsRunning.Reached && desired > 0 && s.podCount[podRunning] >= desired &&
		s.podCount[podPending]+s.podCount[podStarting]+s.podCount[podLost] == 0 {
		s.allPodsRunning = reached(s.now)
	}
	if !s.queueEmpty.Reached && len(s.qorder) > 0 {
		sent, empty := false, true
		for _, q := range s.qorder {
			sent = sent || q.everSent
			if v, f := s.world.QueueDepth(q.name); v+f > 0 {
				empty = false
			}
		}
		if sent && empty {
			s.queueEmpty = reached(s.now)
		}
	}
	if len(s.bill.order) > 0 {
		switch {
		case s.bill.alive():
			s.backToBase = output.Milestone{}
		case !s.backToBase.Reached:
			s.backToBase = reached(s.now)
		}
	}
}

// desired is how many workload pods the workload controllers want now.
func (s *Sim) desired() int {
	n := 0
	for _, rs := range s.rsets {
		n += int(rs.desired)
	}
	for _, j := range s.jobs {
		n += int(j.wanted())
	}
	return n
}

// sample records one timeline row and schedules the next. Running pods
// include those finishing their work after a deletion; pending pods are
// all that should run and do not: unbound, starting, or on a dead node.
func (s *Sim) sample() {
	spot, od, perHour := s.bill.live()
	smp := output.Sample{
		T:               s.now,
		DesiredReplicas: s.desired(),
		RunningPods:     s.podCount[podRunning] + s.podCount[podTerminating],
		PendingPods:     s.podCount[podPending] + s.podCount[podStarting] + s.podCount[podLost],
		NodesSpot:       spot,
		NodesOnDemand:   od,
		CostPerHour:     perHour,
	}
	for _, q := range s.qorder {
		v, f := s.world.QueueDepth(q.name)
		smp.QueueVisible += int64(v)
		smp.QueueInFlight += int64(f)
	}
	s.samples = append(s.samples, smp)
	s.hours.sample()
	s.held.sample(s.now)
	if s.opts.Progress != nil && (s.now-s.lastProgress >= time.Minute || s.now == 0) {
		s.lastProgress = s.now
		s.opts.Progress(smp)
	}
	if next := s.now + s.sc.SampleInterval.Duration; next <= s.sc.Duration.Duration {
		s.schedule(next, prioSample, s.sample)
	}
}

func (s *Sim) result() *output.Result {
	launches, cost, onDemand, system := s.bill.launches()
	r := &output.Result{
		Scenario:        s.sc.Name,
		Description:     s.sc.Description,
		Seed:            s.seed,
		Duration:        s.sc.Duration.Duration,
		Samples:         s.samples,
		Launches:        launches,
		LaunchFailures:  s.failures,
		PodsCreated:     s.podsCreated,
		PodStarts:       s.podStarts,
		FirstPodRunning: s.firstPodRunning,
		AllPodsRunning:  s.allPodsRunning,
		QueueEmpty:      s.queueEmpty,
		BackToBase:      s.backToBase,
		Cost:            cost,
		OnDemandCost:    onDemand,
		SystemCost:      system,
		ReservationCost: s.bill.reservationCost(),
		Notes:           s.notes,
		Interruptions:   s.intr.records(),
		NotDisrupted:    s.held.result(),
		StillPending:    s.stillPending(),
	}
	r.CommitmentCost, r.CommitmentCovered = commitmentCost(s.commitments, s.sc.World.Region, launches, r.Duration)
	r.Hours = s.hours.table(s.sc, launches, s.samples)
	r.QueueEmpty.NotApplicable = len(s.qorder) == 0
	return r
}

// stillPending groups the workload pods that should run and do not at the
// end of the run (unbound, starting, or on a dead node) by the last Warning
// Nodesmith published about each.
func (s *Sim) stillPending() []output.PendingGroup {
	groups := map[string]*output.PendingGroup{}
	for _, p := range s.pods {
		if p.daemon || p.deleting || (p.state != podPending && p.state != podStarting && p.state != podLost) {
			continue
		}
		why := s.recorder.podWhy[p.key]
		g := groups[why]
		if g == nil {
			g = &output.PendingGroup{Reason: why}
			groups[why] = g
		}
		g.Pods++
		g.Examples = append(g.Examples, p.key.String())
	}
	out := make([]output.PendingGroup, 0, len(groups))
	for _, g := range groups {
		slices.Sort(g.Examples)
		g.Examples = g.Examples[:min(3, len(g.Examples))]
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b output.PendingGroup) int {
		return cmp.Or(cmp.Compare(b.Pods, a.Pods), cmp.Compare(a.Reason, b.Reason))
	})
	return out
}
