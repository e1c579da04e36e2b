package convert

import (
	"strings"
	"testing"
)

// TestConvertNodeRole: a node role the example controller policy cannot
// pass is kept with a warning naming the fix; --node-role replaces it.
func TestConvertNodeRole(t *testing.T) {
	const class = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: c}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]
`
	tests := []struct {
		name     string
		spec     string // the node role part of the class
		nodeRole string
		wantRole string // "" for none
		wantProf string
		// wantWarn are substrings of the one warning; none: no warning.
		wantWarn []string
	}{
		{name: "Karpenter's role is kept, with the fix", spec: "  role: KarpenterNodeRole-my-cluster\n",
			wantRole: "KarpenterNodeRole-my-cluster",
			wantWarn: []string{"spec.role KarpenterNodeRole-my-cluster is kept", "iam:PassRole", "never becomes Ready",
				"--node-role NodesmithNodeRole-<cluster>", "PassNodeRole statement"}},
		{name: "the example's role passes", spec: "  role: NodesmithNodeRole-my-cluster\n",
			wantRole: "NodesmithNodeRole-my-cluster"},
		{name: "an instance profile is kept, with the fix", spec: "  instanceProfile: KarpenterNodeInstanceProfile-my-cluster\n",
			wantProf: "KarpenterNodeInstanceProfile-my-cluster",
			wantWarn: []string{"spec.instanceProfile KarpenterNodeInstanceProfile-my-cluster is kept", "passes its role", "--node-role"}},
		{name: "--node-role replaces the role", spec: "  role: KarpenterNodeRole-my-cluster\n", nodeRole: "NodesmithNodeRole-prod",
			wantRole: "NodesmithNodeRole-prod",
			wantWarn: []string{"spec.role KarpenterNodeRole-my-cluster replaced by NodesmithNodeRole-prod (--node-role)"}},
		{name: "--node-role replaces an instance profile", spec: "  instanceProfile: KarpenterNodeInstanceProfile-my-cluster\n", nodeRole: "NodesmithNodeRole-prod",
			wantRole: "NodesmithNodeRole-prod",
			wantWarn: []string{"spec.instanceProfile KarpenterNodeInstanceProfile-my-cluster replaced by spec.role NodesmithNodeRole-prod"}},
		{name: "--node-role equal to the role says nothing", spec: "  role: NodesmithNodeRole-prod\n", nodeRole: "NodesmithNodeRole-prod",
			wantRole: "NodesmithNodeRole-prod"},
		{name: "--node-role is the user's choice, passable or not", spec: "  role: KarpenterNodeRole-my-cluster\n", nodeRole: "KarpenterNodeRole-my-cluster",
			wantRole: "KarpenterNodeRole-my-cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ConvertWith(strings.NewReader(class+tt.spec), Options{NodeRole: tt.nodeRole})
			if err != nil {
				t.Fatal(err)
			}
			s := classes(res)["c"].Spec
			if got := deref(s.Role); got != tt.wantRole {
				t.Errorf("spec.role = %q, want %q", got, tt.wantRole)
			}
			if got := deref(s.InstanceProfile); got != tt.wantProf {
				t.Errorf("spec.instanceProfile = %q, want %q", got, tt.wantProf)
			}
			var roleWarnings []string
			for _, w := range res.Warnings {
				if w.Field == "spec.role" || w.Field == "spec.instanceProfile" {
					roleWarnings = append(roleWarnings, w.String())
				}
			}
			if len(tt.wantWarn) == 0 {
				if len(roleWarnings) > 0 {
					t.Errorf("warnings %q, want none about the role", roleWarnings)
				}
				return
			}
			if len(roleWarnings) != 1 {
				t.Fatalf("warnings about the role = %q, want one", roleWarnings)
			}
			for _, sub := range tt.wantWarn {
				if !strings.Contains(roleWarnings[0], sub) {
					t.Errorf("warning %q lacks %q", roleWarnings[0], sub)
				}
			}
		})
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func TestPassableUnderExamplePolicy(t *testing.T) {
	for role, want := range map[string]bool{
		"NodesmithNodeRole-my-cluster": true,
		"KarpenterNodeRole-my-cluster": false,
		"nodesmithnoderole-my-cluster": false, // IAM names are case-preserving; the policy's ARN is exact
		"":                             false,
	} {
		if got := PassableUnderExamplePolicy(role); got != want {
			t.Errorf("PassableUnderExamplePolicy(%q) = %v, want %v", role, got, want)
		}
	}
}
