package simulator

import (
	"strings"
	"testing"
	"time"

	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

const jobsAndPrices = `
name: jobs-and-prices
duration: 12m
world: {clusterName: t, zones: [us-east-1a]}
nodeClasses:
  - metadata: {name: default}
    spec:
      amiSelectorTerms: [{alias: al2023@latest}]
      role: r
      subnetSelectorTerms: [{tags: {nodesmith.sh/discovery: t}}]
      securityGroupSelectorTerms: [{tags: {nodesmith.sh/discovery: t}}]
nodePools:
  - metadata: {name: p}
    spec:
      template:
        spec:
          nodeClassRef: {group: aws.nodesmith.sh, kind: EC2NodeClass, name: default}
          requirements:
            - {key: nodesmith.sh/capacity-type, operator: In, values: [spot]}
            - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.xlarge]}
      disruption: {consolidateAfter: 10s}
deployments:
  - name: web
    template: {spec: {containers: [{name: c, image: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]}}
    replicas: [{at: 0s, replicas: 3}, {at: 6m, replicas: 0}]
jobs:
  - name: batch
    at: 1m
    parallelism: 2
    completions: 6
    duration: 1m
    template: {spec: {containers: [{name: c, image: c, resources: {requests: {cpu: "3", memory: 1Gi}}}]}}
events:
  - at: 3m
    priceChange: {instanceType: m6i.xlarge, capacityType: spot, price: 1.5}
`

func TestJobsDeploymentsAndPriceChange(t *testing.T) {
	sc, err := scenario.Parse([]byte(jobsAndPrices))
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, sc)
	if res.PodsCreated != 9 {
		t.Errorf("pods created = %d, want 3 web + 6 job pods", res.PodsCreated)
	}
	// Six one-minute job pods, two at a time, from t=1m: three waves.
	var peakDesired int
	for _, s := range res.Samples {
		peakDesired = max(peakDesired, s.DesiredReplicas)
	}
	if peakDesired != 5 {
		t.Errorf("peak desired = %d, want 3 web + 2 job pods", peakDesired)
	}
	last := res.Samples[len(res.Samples)-1]
	if last.DesiredReplicas != 0 || last.RunningPods != 0 || last.PendingPods != 0 {
		t.Errorf("last sample = %+v, want every job done and the deployment at zero", last)
	}
	reachedWithin(t, "back to base", res.BackToBase, 6*time.Minute, 8*time.Minute)
	if len(res.Launches) == 0 {
		t.Fatal("nothing launched")
	}
	repriced := false
	for _, l := range res.Launches {
		if l.InstanceType != "m6i.xlarge" || l.CapacityType != "spot" {
			t.Errorf("%s: %s %s, want spot m6i.xlarge only", l.NodeClaim, l.CapacityType, l.InstanceType)
		}
		// A node alive across t=3m pays the new price from then on.
		if l.LaunchedAt < 3*time.Minute && l.TerminatedAt > 3*time.Minute {
			repriced = true
			want := l.Price*(3*time.Minute-l.LaunchedAt).Hours() + 1.5*(l.TerminatedAt-3*time.Minute).Hours()
			within(t, l.NodeClaim+" cost", l.Cost, want*0.999, want*1.001)
		}
	}
	if !repriced {
		t.Error("no node lived across the price change")
	}
	if res.QueueEmpty.String() != "n/a" {
		t.Errorf("queue empty = %s, want n/a without queues", res.QueueEmpty)
	}
}

func TestPoolOverrideWithoutSpotCapacity(t *testing.T) {
	yaml := strings.Replace(jobsAndPrices, "world: {clusterName: t, zones: [us-east-1a]}",
		"world: {clusterName: t, zones: [us-east-1a], pools: [{instanceType: m6i.xlarge, capacityType: spot, capacity: 0}]}", 1)
	yaml = strings.Replace(yaml, "values: [spot]}", "values: [spot, on-demand]}", 1)
	sc, err := scenario.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, sc)
	if len(res.Launches) == 0 {
		t.Fatal("nothing launched")
	}
	for _, l := range res.Launches {
		if l.CapacityType != "on-demand" {
			t.Errorf("%s launched %s in a world without m6i.xlarge spot capacity", l.NodeClaim, l.CapacityType)
		}
	}
}
