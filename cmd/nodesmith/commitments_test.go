package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nodesmith/nodesmith/pkg/whatif"
)

// plan prints the new nodes' cost with the commitments and for the plan
// solved ignoring them; without commitments it prints neither.
func TestPlanPrintsCommitmentCost(t *testing.T) {
	r := &whatif.PlanResult{Mode: whatif.ModeRepack, Commitments: &whatif.CommitmentCost{
		ListPerHour: 2, CoveredPerHour: 1.5, AddedPerHour: 0.5,
		IgnoringListPerHour: 1.2, IgnoringCoveredPerHour: 0, IgnoringAddedPerHour: 1.2}}
	var buf bytes.Buffer
	writePlan(&buf, &whatif.Snapshot{}, r)
	for _, want := range []string{
		"with them:     new nodes $2.0000/h at list price, $1.5000/h of it prepaid, $0.5000/h added",
		"ignoring them: new nodes $1.2000/h at list price, $0.0000/h of it prepaid, $1.2000/h added",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("plan output lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	r.Commitments = nil
	writePlan(&buf, &whatif.Snapshot{}, r)
	if strings.Contains(buf.String(), "commitments") {
		t.Errorf("plan without commitments mentions them:\n%s", buf.String())
	}
}

// explain pod names the NodeOverlay that priced the claim.
func TestExplainNamesThePricingOverlay(t *testing.T) {
	r := &whatif.PodReport{Pod: "default/p", Phase: "Pending", Claim: &whatif.Claim{NodePool: "general", Pods: 1,
		InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand", PerHour: 0.05, Options: 3, PricedBy: "od-discount"}}
	var buf bytes.Buffer
	writePodReport(&buf, r, 10)
	if !strings.Contains(buf.String(), "price: set by NodeOverlay od-discount") {
		t.Errorf("explain output lacks the overlay:\n%s", buf.String())
	}
	r.Claim.PricedBy = ""
	buf.Reset()
	writePodReport(&buf, r, 10)
	if strings.Contains(buf.String(), "NodeOverlay") {
		t.Errorf("explain names an overlay for a cloud price:\n%s", buf.String())
	}
}
