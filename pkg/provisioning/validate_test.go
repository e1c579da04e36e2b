package provisioning

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

func TestValidatePool(t *testing.T) {
	cat, err := catalog.Load(catalog.Options{Zones: []string{"us-east-1a", "us-east-1b"}})
	if err != nil {
		t.Fatal(err)
	}
	var types []*catalog.InstanceType
	for _, n := range []string{"m5.large", "m5.xlarge", "c6g.large"} {
		it, ok := cat.Get(n)
		if !ok {
			t.Fatalf("snapshot lacks %s", n)
		}
		types = append(types, it)
	}
	req := func(key string, op corev1.NodeSelectorOperator, vals ...string) nsv1.NodeSelectorRequirementWithMinValues {
		return nsv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: vals}
	}
	two, four := 2, 4
	tests := []struct {
		name       string
		reqs       []nsv1.NodeSelectorRequirementWithMinValues
		labels     map[string]string
		types      []*catalog.InstanceType
		wantReason string
		wantMsg    string
	}{
		{name: "no requirements", types: types},
		{name: "a type that exists", reqs: []nsv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large", "m9.huge")}, types: types},
		{name: "custom keys are not checked against types", reqs: []nsv1.NodeSelectorRequirementWithMinValues{req("team", corev1.NodeSelectorOpIn, "a")}, types: types},
		{name: "no type matches", reqs: []nsv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m9.huge")},
			types: types, wantReason: ReasonNoInstanceTypeMatches, wantMsg: "none of the 3 instance types"},
		{name: "zone outside the node class's subnets", reqs: []nsv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-east-1f")},
			types: types, wantReason: ReasonNoInstanceTypeMatches, wantMsg: "us-east-1f"},
		{name: "arm64 with only x86 types", reqs: []nsv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")},
			types: types[:2], wantReason: ReasonNoInstanceTypeMatches},
		{name: "no types at all", types: nil, wantReason: ReasonNoInstanceTypeMatches, wantMsg: "none of the 0"},
		{name: "minValues met", reqs: []nsv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpExists, MinValues: &two}}, types: types},
		{name: "minValues beyond the catalog", reqs: []nsv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpExists, MinValues: &four}},
			types: types, wantReason: ReasonMinValuesUnsatisfiable, wantMsg: "minValues 4"},
		{name: "a template label the requirements leave alone is the pool's own (pods select on it)",
			labels: map[string]string{"fleet": "spot"}, types: types},
		{name: "a template label the requirements allow", reqs: []nsv1.NodeSelectorRequirementWithMinValues{req("team", corev1.NodeSelectorOpIn, "a", "b")},
			labels: map[string]string{"team": "b"}, types: types},
		{name: "labels contradict requirements", reqs: []nsv1.NodeSelectorRequirementWithMinValues{req("team", corev1.NodeSelectorOpIn, "a")},
			labels: map[string]string{"team": "b"}, types: types, wantReason: ReasonConflictingRequirements},
		{name: "requirements contradict each other", reqs: []nsv1.NodeSelectorRequirementWithMinValues{
			req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"), req(corev1.LabelArchStable, corev1.NodeSelectorOpNotIn, "amd64")},
			types: types, wantReason: ReasonConflictingRequirements},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := &nsv1.NodePool{}
			pool.Spec.Template.Spec.Requirements = tt.reqs
			pool.Spec.Template.ObjectMeta.Labels = tt.labels
			reason, msg := ValidatePool(pool, tt.types)
			if reason != tt.wantReason || !strings.Contains(msg, tt.wantMsg) {
				t.Fatalf("got %q %q, want %q containing %q", reason, msg, tt.wantReason, tt.wantMsg)
			}
		})
	}
}
