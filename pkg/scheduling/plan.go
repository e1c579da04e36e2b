package scheduling

import (
	"fmt"
	"math"
	"sort"
)

// plan turns the filled bins into claims with price-ordered options and
// explains every pod left over. A bin that cannot become a claim (no
// option within the limits, a minValues no option set meets) gives its
// pods back as unschedulable; since that may tip a zone spread, the spread
// is reconciled again and the claims rebuilt.
func (s *solver) plan() *Plan {
	var claims []*ClaimPlan
	for guard := 0; guard < 8; guard++ {
		for guard2 := 0; guard2 < 64; guard2++ {
			spread := s.reconcileSpread()
			keys := s.reconcileKeys()
			if !s.reconcileAffinity() && !spread && !keys {
				break
			}
		}
		s.dropped = s.dropped[:0]
		claims = s.buildClaims()
		if len(s.dropped) == 0 {
			break
		}
	}
	out := &Plan{Nominations: s.noms, NewClaims: claims}
	failed := append([]PodError(nil), s.failed...)
	for _, c := range s.classes {
		st := s.state[c]
		if len(st.left) == 0 {
			continue
		}
		reason := s.explain(c, st)
		for _, pod := range st.left {
			failed = append(failed, PodError{Pod: pod, Reason: fmt.Sprintf("cannot place pod %s: %s", podKey(pod), reason)})
		}
	}
	sortPodErrors(failed)
	out.Unschedulable = failed
	return out
}

// buildClaims builds the claims of the non-empty bins. Limits are
// pessimistic: a claim may launch any of its options, so it is charged
// for the largest it keeps and keeps only options within its budget —
// what it was charged while packing (its cheapest type, and the options
// minValues needs) plus a share of the limit's slack, in proportion to
// that charge, so every claim keeps what it was packed for and the slack
// widens the lists of all claims, not only the first ones. A bin that
// cannot become a claim is emptied: its pods are uncounted and recorded in
// s.failed, and the bin in s.dropped.
func (s *solver) buildClaims() []*ClaimPlan {
	var out []*ClaimPlan
	s.resetReservations()
	s.resetCommitments()
	// charge[p][d]: what the pool's remaining bins were charged; slack[p][d]:
	// the limit left beyond launched capacity and those charges.
	charge := make([]vec, len(s.pools))
	slack := make([]vec, len(s.pools))
	for i, p := range s.pools {
		charge[i] = make(vec, len(p.limit))
	}
	for _, b := range s.bins {
		if len(b.pods) > 0 && b.cur >= 0 && b.p.hasLimit {
			charge[b.p.idx].add(b.largestCharge())
		}
	}
	for i, p := range s.pools {
		slack[i] = make(vec, len(p.limit))
		for d := range p.limit {
			if p.limit[d] >= 0 {
				slack[i][d] = max(0, p.limit[d]-p.launched[d]-charge[i][d])
			}
		}
	}
	// With ChargeExpectedLaunch, a pool whose limit cannot hold every
	// option of every claim (tight) plans in turns: each claim's budget is
	// what the limit leaves at its turn, launched capacity and the
	// expected launches of the claims before it (charge.go), and claims go
	// in turn order (limits.go turnsExceed), those whose minValues options
	// exceed their charge most first. A pool with room for every option
	// keeps the largest-option rule: it costs nothing there, and any
	// option may launch, concurrently.
	var turn []vec
	bins := s.bins
	if s.opts.ChargeExpectedLaunch {
		turn = make([]vec, len(s.pools))
		anyTight := false
		for i, p := range s.pools {
			p.turns = false
			for d := range p.limit {
				if p.limit[d] >= 0 && p.launched[d]+charge[i][d] > p.limit[d] {
					p.turns = true
				}
			}
			anyTight = anyTight || p.turns
			turn[i] = p.launched.clone()
		}
		if anyTight {
			bins = append([]*bin(nil), s.bins...)
			size := make(map[*bin]float64, len(bins))
			for _, b := range bins {
				if len(b.pods) > 0 && b.cur >= 0 && b.p.turns && b.extra != nil {
					size[b] = b.p.limitShareOf(b.extra)
				}
			}
			sort.SliceStable(bins, func(i, j int) bool { return size[bins[i]] > size[bins[j]] })
		}
	}
	n := 0
	for _, b := range bins {
		if len(b.pods) == 0 {
			continue
		}
		p := b.p
		var budget, c vec
		if p.hasLimit && p.turns {
			budget = make(vec, len(p.limit))
			for d := range p.limit {
				budget[d] = math.MaxInt64
				if p.limit[d] >= 0 {
					budget[d] = max(0, p.limit[d]-turn[p.idx][d])
				}
			}
		} else if p.hasLimit {
			budget = make(vec, len(p.limit))
			c = b.largestCharge()
			for d := range p.limit {
				budget[d] = math.MaxInt64
				if p.limit[d] < 0 {
					continue
				}
				share := int64(0)
				if charge[p.idx][d] > 0 {
					share = int64(float64(slack[p.idx][d]) * float64(c[d]) / float64(charge[p.idx][d]))
				}
				budget[d] = c[d] + share
			}
		}
		claim, maxCap, err := s.claimFor(b, budget)
		if err != nil {
			for i, pod := range b.pods {
				s.failed = append(s.failed, PodError{Pod: pod, Reason: fmt.Sprintf("cannot place pod %s: %v", podKey(pod), err)})
				s.uncount(b.podCls[i], &b.host, b.zone)
			}
			b.pods, b.podCls = nil, nil
			s.dropped = append(s.dropped, b)
			continue
		}
		if budget != nil && p.turns {
			turn[p.idx].add(s.d.fromList(ClaimCharge(claim.Options)))
		} else if budget != nil {
			for d := range p.limit {
				if p.limit[d] >= 0 {
					charge[p.idx][d] -= c[d]
					slack[p.idx][d] = max(0, slack[p.idx][d]-(maxCap[d]-c[d]))
				}
			}
		}
		n++
		claim.Name = fmt.Sprintf("claim-%04d", n)
		out = append(out, claim)
	}
	return out
}

func (s *solver) explain(c *podClass, st *classState) string {
	last := c.variants[len(c.variants)-1]
	var parts []string
	anyPool := false
	for _, f := range last.fits {
		if f.ok {
			anyPool = true
		}
	}
	if !anyPool {
		if len(s.pools) == 0 {
			parts = append(parts, "no NodePool exists and no existing node fits")
		} else {
			parts = append(parts, "no NodePool can satisfy it")
			for _, f := range last.fits {
				parts = append(parts, f.reason)
			}
		}
		return joinReasons(parts)
	}
	if len(st.why) > 0 {
		return joinReasons(st.why)
	}
	return "no node or new claim could take it with its topology constraints"
}
