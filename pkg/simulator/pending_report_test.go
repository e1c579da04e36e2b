package simulator

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// Issue 23: a pod that stays Pending shows its full reason in report.md,
// never cut off as the notes are. The consolidation scenario's pool is
// capped at 16 vCPUs, so most of its 1,500 pods can never run; the reason
// Nodesmith gives them names the limit and what the pool counts.
func TestReportSaysWhyPodsPend(t *testing.T) {
	sc := loadExample(t, "consolidation.yaml")
	sc.Duration.Duration = 3 * time.Minute
	sc.Events = nil
	sc.NodePools[0].Spec.Limits = nsv1.Limits{corev1.ResourceCPU: resource.MustParse("16")}
	res := run(t, sc)

	pending := res.Samples[len(res.Samples)-1].PendingPods
	if pending == 0 {
		t.Fatal("no pod pending at the end: the limit did not bind")
	}
	var report bytes.Buffer
	if err := output.WriteReport(&report, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(report.String(), "## Pods still Pending at the end") {
		t.Fatalf("report.md has no section for the %d pods left pending", pending)
	}
	counted, limit := 0, false
	for _, g := range res.StillPending {
		t.Logf("%d pods (%s): %d chars: %s", g.Pods, strings.Join(g.Examples, ", "), len(g.Reason), g.Reason)
		counted += g.Pods
		if g.Reason != "" && !strings.Contains(report.String(), g.Reason) {
			t.Errorf("report.md does not hold the whole reason %q", g.Reason)
		}
		limit = limit || strings.Contains(g.Reason, "limit cpu")
	}
	if counted != pending {
		t.Errorf("the groups hold %d pods, the last sample counts %d pending", counted, pending)
	}
	if !limit {
		t.Errorf("no group names the cpu limit: %+v", res.StillPending)
	}
}
