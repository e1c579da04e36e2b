package aws

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

func templateNames(e *env) []string {
	var out []string
	for _, lt := range e.world.LaunchTemplates() {
		out = append(out, lt.Name)
	}
	slices.Sort(out)
	return out
}

// TestLaunchTemplatesCollected: a node class edit leaves the old template
// behind; after the TTL without a launch it is deleted, while the template
// in use and another cluster's template stay.
func TestLaunchTemplatesCollected(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.create(newClaim("old", reqIn(corev1.LabelInstanceTypeStable, "m5.large")))
	before := templateNames(e)
	if len(before) != 1 {
		t.Fatalf("templates after one launch: %v", before)
	}
	edited := defaultNodeClass()
	edited.Spec.Tags = map[string]string{"team": "platform"} // new settings, new template
	e.addNodeClass(edited)
	e.clock.Step(2 * time.Hour)
	e.create(newClaim("new", reqIn(corev1.LabelInstanceTypeStable, "m5.large")))
	// Another cluster's template, tagged as ours would be.
	if _, err := e.ec2.CreateLaunchTemplate(e.ctx, createTemplateInput("nodesmith/other-cluster", &templateSpec{
		Cluster: "other", ImageID: e.world.Images()[0].ID, Tags: map[string]string{awsv1.TagCluster: "other"}})); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(30 * time.Minute)
	deleted, err := e.p.GarbageCollectLaunchTemplates(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(deleted, before) {
		t.Errorf("deleted %v, want the unused %v", deleted, before)
	}
	left := templateNames(e)
	if len(left) != 2 || slices.Contains(left, before[0]) || !slices.Contains(left, "nodesmith/other-cluster") {
		t.Errorf("templates left %v: want the one in use and the other cluster's", left)
	}
	// A launch with the old settings recreates the deleted template.
	e.addNodeClass(defaultNodeClass())
	e.create(newClaim("again", reqIn(corev1.LabelInstanceTypeStable, "m5.large")))
	if !slices.Contains(templateNames(e), before[0]) {
		t.Errorf("the collected template was not recreated: %v", templateNames(e))
	}
}
