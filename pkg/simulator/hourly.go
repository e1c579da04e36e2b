package simulator

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

// freshInterval is the spacing of the fresh plans an hour's fresh cost
// averages.
const freshInterval = 5 * time.Minute

// hourly collects what the hourly table needs beyond the launches and
// the timeline: pods evicted, the cost of each hour (billing.accrue
// splits it), and the fresh plans of the workload pods at each mark. Only
// runs longer than an hour keep one.
type hourly struct {
	s         *Sim
	evictions []int
	cost      []float64
	// fresh sums the fresh plans' $/h per hour, freshN counts them.
	fresh  []float64
	freshN []int
}

func newHourly(s *Sim) *hourly {
	if s.sc.Duration.Duration <= time.Hour {
		return nil
	}
	n := int((s.sc.Duration.Duration + time.Hour - 1) / time.Hour)
	return &hourly{s: s, evictions: make([]int, n), cost: make([]float64, n), fresh: make([]float64, n), freshN: make([]int, n)}
}

// hourOf is the row t falls in (the run's end belongs to the last hour).
func (h *hourly) hourOf(t time.Duration) int {
	return min(int(t/time.Hour), len(h.cost)-1)
}

// evicted counts one pod the Eviction API let go.
func (h *hourly) evicted() {
	if h != nil {
		h.evictions[h.hourOf(h.s.now)]++
	}
}

// accrue adds price (USD per hour) paid from from to to, split over the hours.
func (h *hourly) accrue(price float64, from, to time.Duration) {
	if h == nil {
		return
	}
	for from < to {
		i := h.hourOf(from)
		end := min(to, time.Duration(i+1)*time.Hour)
		if i == len(h.cost)-1 {
			end = to
		}
		h.cost[i] += price * (end - from).Hours()
		from = end
	}
}

// sample solves a fresh plan of the workload pods at a 5-minute mark.
func (h *hourly) sample() {
	if h == nil || h.s.now%freshInterval != 0 || h.s.now >= h.s.sc.Duration.Duration {
		return
	}
	perHour, err := h.s.freshCost()
	if err != nil {
		h.s.fail(err)
		return
	}
	i := h.hourOf(h.s.now)
	h.fresh[i] += perHour
	h.freshN[i]++
}

// freshCost is the $/h of a fresh plan (FreshPlan) for the workload pods
// wanted now: every pod of a workload that is not being deleted and has
// not finished, whether it runs, starts, waits or lost its node, from the
// run's NodePools and the catalog the simulated AWS sells from.
func (s *Sim) freshCost() (float64, error) {
	var live []*pod
	for _, p := range s.pods {
		if p.daemon || p.deleting || p.succeeded || p.state == podTerminating || p.state == podGone {
			continue
		}
		live = append(live, p)
	}
	sort.Slice(live, func(i, j int) bool { return live[i].seq < live[j].seq }) // the solver's input in a repeatable order
	var pods []*corev1.Pod
	for _, p := range live {
		if obj := s.getPod(p); obj != nil {
			obj.Spec.NodeName = ""
			pods = append(pods, obj)
		}
	}
	if len(pods) == 0 {
		return 0, nil
	}
	var pools nsv1.NodePoolList
	if err := s.kube.List(s.ctx, &pools); err != nil {
		return 0, err
	}
	var nps []*nsv1.NodePool
	for i := range pools.Items {
		nps = append(nps, &pools.Items[i])
	}
	var daemons []*appsv1.DaemonSet
	for i := range s.sc.DaemonSets {
		daemons = append(daemons, &s.sc.DaemonSets[i])
	}
	plan, err := FreshPlan(pods, nps, s.catalog.Types(), daemons)
	if err != nil {
		return 0, fmt.Errorf("fresh plan of %d pods: %w", len(pods), err)
	}
	return plan.Cost(), nil
}

// table builds the hourly rows from the run's launches and samples.
func (h *hourly) table(sc *scenario.Scenario, launches []output.Launch, samples []output.Sample) []output.Hour {
	if h == nil {
		return nil
	}
	end := sc.Duration.Duration
	rows := make([]output.Hour, len(h.cost))
	for i := range rows {
		r := &rows[i]
		r.Start, r.End = time.Duration(i)*time.Hour, min(time.Duration(i+1)*time.Hour, end)
		r.Evictions, r.Cost = h.evictions[i], h.cost[i]
		if h.freshN[i] > 0 {
			r.Fresh = h.fresh[i] / float64(h.freshN[i]) * (r.End - r.Start).Hours()
			r.FreshSamples = h.freshN[i]
		}
		r.PodsMin = -1
		for _, smp := range samples {
			if smp.T >= r.Start-output.SettleBefore && smp.T < r.End {
				if r.PodsMin < 0 || smp.DesiredReplicas < r.PodsMin {
					r.PodsMin = smp.DesiredReplicas
				}
				r.PodsMax = max(r.PodsMax, smp.DesiredReplicas)
			}
		}
		r.PodsMin = max(r.PodsMin, 0)
		r.Events = scheduleChanges(sc, r.Start-output.SettleBefore, r.End)
		r.Quiet = output.IsQuiet(len(r.Events), r.PodsMin, r.PodsMax)
		churn := map[string]int{}
		for _, l := range launches {
			if l.LaunchedAt >= r.Start && l.LaunchedAt < r.End {
				r.Launches++
			}
			if !l.Terminated || l.TerminatedAt < r.Start || l.TerminatedAt >= r.End {
				continue
			}
			r.Deletions++
			if l.LaunchedAt >= r.Start && l.Reason != "spot interruption" {
				k := l.Pool + "/" + l.InstanceType
				if churn[k]++; churn[k] > r.Churn || (churn[k] == r.Churn && k < r.ChurnOf) {
					r.Churn, r.ChurnOf = churn[k], k
				}
			}
		}
	}
	return rows
}

// scheduleChanges lists the scenario's events and the workloads' schedule
// changes (a Deployment's replica step, a Job's start) in [from, to), in
// time order: what makes an hour not quiet by itself.
func scheduleChanges(sc *scenario.Scenario, from, to time.Duration) []string {
	type change struct {
		at   time.Duration
		what string
	}
	var cs []change
	in := func(at time.Duration) bool { return at >= from && at < to }
	for _, e := range sc.Events {
		if in(e.At.Duration) {
			cs = append(cs, change{e.At.Duration, eventKind(e)})
		}
	}
	for _, d := range sc.Deployments {
		for _, st := range d.Replicas {
			if in(st.At.Duration) {
				cs = append(cs, change{st.At.Duration, fmt.Sprintf("%s→%d", d.Name, st.Replicas)})
			}
		}
	}
	for _, j := range sc.Jobs {
		if in(j.At.Duration) {
			cs = append(cs, change{j.At.Duration, "job " + j.Name})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].at < cs[j].at })
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = output.FormatDuration(c.at) + " " + c.what
	}
	return out
}

// eventKind names a scenario event by its action.
func eventKind(e scenario.Event) string {
	switch {
	case e.SendMessages != nil:
		return "sendMessages"
	case e.SpotInterruption != nil:
		return "spotInterruption"
	case e.ICE != nil:
		return "ice"
	case e.PriceChange != nil:
		return "priceChange"
	case e.DeleteNodes != nil:
		return "deleteNodes"
	case e.NodeCondition != nil:
		return "nodeCondition"
	case e.RebalanceRecommendation != nil:
		return "rebalanceRecommendation"
	case e.AMIRelease != nil:
		return "amiRelease"
	case e.ScaleNodePool != nil:
		return "scaleNodePool"
	}
	return "event"
}
