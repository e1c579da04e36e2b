package perf

import (
	"fmt"
	"testing"
	"time"
)

// Karpenter's performance scenarios (kubernetes-sigs/karpenter,
// test/suites/performance), with their pod counts, requests and placement
// constraints, and the limits their suite fails on. Every pod selects the
// perf pool (perfPool).

// small and large are the two resource profiles their scenarios share.
func small(name string, n int32) workload {
	return workload{name: name, replicas: n, cpu: "950m", mem: "3900Mi"}
}

func large(name string, n int32) workload {
	return workload{name: name, replicas: n, cpu: "3800m", mem: "31Gi"}
}

// basic is "Basic Deployment": 500 pods of 900m / 3100Mi and 500 of
// 3500m / 28Gi; then both scale to 350 and the suite times the
// consolidation (consolidation below).
func basicWorkloads() []workload {
	return []workload{
		{name: "small-resource-app", replicas: 500, cpu: "900m", mem: "3100Mi", scaleTo: 350},
		{name: "large-resource-app", replicas: 500, cpu: "3500m", mem: "28Gi", scaleTo: 350},
	}
}

var (
	scBasic = scenario{
		key: "basic", title: "basic scale-out, 1,000 pods",
		workloads: basicWorkloads(),
		limit:     limits{time: 2 * time.Minute, memMB: 260, cores: 0.5, cpuUtil: 0.53, memUtil: 0.65},
		timeout:   10 * time.Minute,
	}
	scConsolidation = scenario{
		key: "consolidation", title: "consolidation, 1,000 → 700 pods",
		workloads:  basicWorkloads(),
		disruption: "consolidation",
		limit:      limits{time: 20 * time.Minute},
		timeout:    25 * time.Minute,
	}
	scHostnameSpread = scenario{
		key: "hostname-spread", title: "hostname spread, 1,000 pods",
		workloads: []workload{withHostSpread(small("small-resource-app", 500)), large("large-resource-app", 500)},
		limit:     limits{time: 5 * time.Minute, memMB: 680},
		timeout:   10 * time.Minute,
	}
	scHostnameSpreadXL = scenario{
		key: "hostname-spread-xl", title: "hostname spread XL, 2,000 pods",
		workloads: []workload{withHostSpread(small("small-resource-app", 1000)), large("large-resource-app", 1000)},
		limit:     limits{time: 35 * time.Minute, memMB: 1330},
		timeout:   40 * time.Minute,
	}
	scSelfAntiAffinity = scenario{
		key: "self-anti-affinity", title: "self anti-affinity, 500 pods",
		workloads: []workload{{name: "small-resource-app", replicas: 500, cpu: "900m", mem: "3100Mi", antiAff: true}},
		limit:     limits{time: 5 * time.Minute, memMB: 620},
		timeout:   10 * time.Minute,
	}
	scWide = scenario{
		key: "wide", title: "30 wide deployments, 1,000 pods",
		workloads: wideWorkloads(),
		limit:     limits{time: 5 * time.Minute, memMB: 370},
		timeout:   10 * time.Minute,
	}
	// do-not-disrupt: 500 hostname-spread small pods, 500 large, 100
	// do-not-disrupt pods of 950m / 450Mi; the limit is the scale-out's.
	// Then small and large scale to 250 each and every node running a
	// do-not-disrupt pod must stay.
	scDoNotDisrupt = scenario{
		key: "do-not-disrupt", title: "do-not-disrupt, 1,100 pods",
		workloads: []workload{
			withScale(withHostSpread(small("small-resource-app", 500)), 250),
			withScale(large("large-resource-app", 500), 250),
			{name: "do-not-disrupt-app", replicas: 100, cpu: "950m", mem: "450Mi", doNotDisrupt: true},
		},
		protect: true,
		limit:   limits{time: 4 * time.Minute, memMB: 645},
		timeout: 25 * time.Minute,
	}
	// drift: 300 hostname-spread small pods and 300 large; after the
	// scale-out the pool's template changes (an annotation) and every node
	// is replaced.
	scDrift = scenario{
		key: "drift", title: "drift, 600 pods",
		workloads:  []workload{withHostSpread(small("hostname-spread-app", 300)), large("standard-app", 300)},
		disruption: "drift",
		limit:      limits{time: 50 * time.Minute, memMB: 470},
		timeout:    55 * time.Minute,
	}
)

func withHostSpread(w workload) workload { w.hostSpread = true; return w }

func withScale(w workload, n int32) workload { w.scaleTo = n; return w }

// wideWorkloads are the 30 Deployments of "Wide Deployments": requests
// from 250m to 4 vCPU and 300Mi to 64Gi, 35 pods each for the first twenty
// and 30 for the last ten (1,000), every one spread over zones, the first
// three with required anti-affinity to themselves on hostname and the next
// three also spread over hostnames.
func wideWorkloads() []workload {
	cpus := []string{
		"250m", "500m", "750m", "1000m", "1500m", "2000m", "2500m", "3000m", "3500m", "4000m",
		"2500m", "1000m", "1500m", "3000m", "1800m", "2000m", "3500m", "4000m", "250m", "500m",
		"750m", "1000m", "1500m", "2000m", "2500m", "3000m", "3500m", "4000m", "3500m", "3000m",
	}
	mems := []string{
		"300Mi", "500Mi", "750Mi", "1Gi", "2Gi", "4Gi", "8Gi", "4Gi", "16Gi", "10Gi",
		"64Gi", "30Gi", "32Gi", "32Gi", "30Gi", "20Gi", "30Gi", "300Mi", "500Mi", "750Mi",
		"1Gi", "2Gi", "4Gi", "8Gi", "16Gi", "32Gi", "28Gi", "64Gi", "13Gi", "24Gi",
	}
	out := make([]workload, 30)
	for i := range out {
		n := int32(35)
		if i >= 20 {
			n = 30
		}
		out[i] = workload{name: fmt.Sprintf("wide-deployment-%d", i+1), replicas: n, cpu: cpus[i], mem: mems[i],
			zoneSpread: true, antiAff: i < 3, hostSpread: i >= 3 && i < 6}
	}
	return out
}

// TestScaleOutAndConsolidation is the CI share of the suite (make test):
// Karpenter's basic scale-out (1,000 pods) and its consolidation to 700 in
// one run: the scale-out's figures are checked against the basic
// scenario's limits, the scale-down's against consolidation's.
func TestScaleOutAndConsolidation(t *testing.T) {
	runBasicAndConsolidation(t, 1)
}

// runBasicAndConsolidation runs the consolidation scenario, whose first
// phase is the basic scale-out, and records both rows: Karpenter's suite
// runs them as one test too.
func runBasicAndConsolidation(t *testing.T, run int) {
	r := runScenario(t, scConsolidation, run)
	if !r.done {
		return
	}
	basic := r
	basic.sc, basic.disrupt, basic.nodesEnd, basic.note = scBasic, 0, 0, ""
	basic.use = r.outUse
	record(basic)
	checkLimits(t, basic)
}
