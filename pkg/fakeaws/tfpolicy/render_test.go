package tfpolicy

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/nodesmith/nodesmith/pkg/fakeaws/iampolicy"
)

func repo(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", ".."}, parts...)...)
}

func exampleDir() string { return repo("examples", "terraform") }

func labValues() Values {
	return Values{Variables: map[string]string{"cluster_name": "lab"}, AccountID: "123456789012", Region: "us-east-1"}
}

// productActions are the AWS calls of the controller's code: the AWS
// provider, cluster discovery, the controllers and the command.
func productActions(t *testing.T) []string {
	t.Helper()
	actions, err := CalledActions(repo("pkg", "providers"), repo("pkg", "clusterinfo"), repo("pkg", "controllers"), repo("cmd", "controller"))
	if err != nil {
		t.Fatal(err)
	}
	// Guard the scan itself: these calls are known to exist.
	for _, a := range []string{"ec2:CreateFleet", "ec2:TerminateInstances", "ec2:DeleteLaunchTemplate", "ssm:GetParameter",
		"iam:CreateInstanceProfile", "pricing:GetProducts", "eks:DescribeCluster", "iam:PassRole"} {
		if !slices.Contains(actions, a) {
			t.Fatalf("the scan of the code found no %s among %v", a, actions)
		}
	}
	return actions
}

func TestPolicyGrantsEveryCallTheCodeMakes(t *testing.T) {
	p, _, err := Render(exampleDir(), labValues())
	if err != nil {
		t.Fatal(err)
	}
	if missing := MissingActions(p, productActions(t)); len(missing) > 0 {
		t.Fatalf("examples/terraform/controller_policy.tf does not grant %v, which the code calls", missing)
	}
}

func TestPolicyIsLeastPrivilege(t *testing.T) {
	p, _, err := Render(exampleDir(), labValues())
	if err != nil {
		t.Fatal(err)
	}
	if problems := Problems(p); len(problems) > 0 {
		t.Fatalf("policy problems:\n  %s", strings.Join(problems, "\n  "))
	}
	// The deletes and instance-profile writes are scoped by the cluster tag.
	for _, sid := range []string{"DeleteOwned", "ManageOwnInstanceProfiles", "CreateTaggedForCluster", "CreateInstanceProfiles", "NameOwnInstances", "LaunchFromOwnLaunchTemplates"} {
		i := slices.IndexFunc(p.Statement, func(s iampolicy.Statement) bool { return s.Sid == sid })
		if i < 0 {
			t.Fatalf("no statement %s", sid)
		}
		found := false
		for _, keys := range p.Statement[i].Condition {
			for k, v := range keys {
				found = found || strings.HasSuffix(k, "Tag/nodesmith.sh/cluster") && slices.Equal(v, []string{"lab"})
			}
		}
		if !found {
			t.Errorf("%s is not conditioned on nodesmith.sh/cluster = lab: %+v", sid, p.Statement[i].Condition)
		}
	}
}

// TestChecksCatchARemovedPermission proves the checks can fail: a policy
// without one needed action, or with a wildcard, is reported by name.
func TestChecksCatchARemovedPermission(t *testing.T) {
	p, _, err := Render(exampleDir(), labValues())
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Statement {
		p.Statement[i].Action = slices.DeleteFunc(p.Statement[i].Action, func(a string) bool { return a == "ec2:TerminateInstances" })
	}
	if missing := MissingActions(p, productActions(t)); !slices.Equal(missing, []string{"ec2:TerminateInstances"}) {
		t.Errorf("missing %v, want exactly ec2:TerminateInstances", missing)
	}
	p.Statement = append(p.Statement, iampolicy.Statement{Sid: "Lazy", Effect: "Allow", Action: iampolicy.StringList{"ec2:*"}, Resource: iampolicy.StringList{"*"}})
	problems := strings.Join(Problems(p), "\n")
	if !strings.Contains(problems, "Lazy: wildcard action ec2:*") || !strings.Contains(problems, "Lazy: write action ec2:* on every resource") {
		t.Errorf("problems %q do not name the wildcard statement", problems)
	}
}

// attr evaluates a literal attribute of a block.
func attr(t *testing.T, b *hclsyntax.Block, name string, m *Module) cty.Value {
	t.Helper()
	a, ok := b.Body.Attributes[name]
	if !ok {
		t.Fatalf("%s %v has no %s", b.Type, b.Labels, name)
	}
	ctx, err := m.EvalContext(labValues())
	if err != nil {
		t.Fatal(err)
	}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatalf("%s %v %s: %s", b.Type, b.Labels, name, diags.Error())
	}
	return v
}

func TestInfrastructure(t *testing.T) {
	m, err := Load(exampleDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := m.EvalContext(labValues())
	if err != nil {
		t.Fatal(err)
	}
	queues := map[string]*hclsyntax.Block{}
	for _, b := range m.Blocks("resource", "aws_sqs_queue") {
		queues[b.Labels[1]] = b
	}
	q := queues["interruption"]
	if q == nil || queues["interruption_dlq"] == nil {
		t.Fatalf("want the interruption queue and its DLQ, have %v", queues)
	}
	if v := attr(t, q, "sqs_managed_sse_enabled", m); v.True() != true {
		t.Error("the interruption queue is not encrypted")
	}
	if _, ok := q.Body.Attributes["redrive_policy"]; !ok {
		t.Error("the interruption queue has no dead-letter queue")
	}
	events := ctx.Variables["local"].GetAttr("interruption_events")
	want := map[string]string{
		"EC2 Spot Instance Interruption Warning": "aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning": "aws.ec2",
		"EC2 Instance Rebalance Recommendation":  "aws.ec2",
		"EC2 Instance State-change Notification": "aws.ec2", "AWS Health Event": "aws.health",
	}
	got := map[string]string{}
	for it := events.ElementIterator(); it.Next(); {
		_, e := it.Element()
		got[e.GetAttr("detail_type").AsString()] = e.GetAttr("source").AsString()
	}
	if len(got) != len(want) {
		t.Errorf("event rules for %v, want %v", got, want)
	}
	for dt, src := range want {
		if got[dt] != src {
			t.Errorf("no rule for %s from %s", dt, src)
		}
	}
	if len(m.Blocks("resource", "aws_cloudwatch_event_rule")) != 1 || len(m.Blocks("resource", "aws_cloudwatch_event_target")) != 1 {
		t.Error("want one event rule and one target resource over interruption_events")
	}
	for _, r := range []string{"subnet_discovery", "security_group_discovery"} {
		b := m.Blocks("resource", "aws_ec2_tag", r)
		if len(b) != 1 || attr(t, b[0], "key", m).AsString() != "nodesmith.sh/discovery" {
			t.Errorf("no aws_ec2_tag.%s with the nodesmith.sh/discovery key", r)
		}
	}
	for _, r := range [][]string{{"aws_iam_role", "node"}, {"aws_iam_instance_profile", "node"}, {"aws_eks_access_entry", "node"},
		{"aws_iam_role", "controller"}, {"aws_eks_pod_identity_association", "controller"}} {
		if len(m.Blocks("resource", r...)) != 1 {
			t.Errorf("no resource %s.%s", r[0], r[1])
		}
	}
	// Both ways of getting the role are written out in the trust policy.
	trust := m.Blocks("data", "aws_iam_policy_document", "controller_trust")
	if len(trust) != 1 {
		t.Fatal("no controller trust policy")
	}
	src := string(trust[0].Body.SrcRange.SliceBytes(m.Files[trust[0].Body.SrcRange.Filename].Bytes))
	for _, w := range []string{"sts:AssumeRoleWithWebIdentity", "system:serviceaccount:", "pods.eks.amazonaws.com", "sts:TagSession"} {
		if !strings.Contains(src, w) {
			t.Errorf("trust policy lacks %s", w)
		}
	}
}

// TestRenderVariables: the node role and queue names follow the variables,
// so a lab can render the policy for the roles and queue it has.
func TestRenderVariables(t *testing.T) {
	v := labValues()
	v.Variables["node_role_name"] = "NodesmithNodeRole-my-cluster"
	v.Variables["interruption_queue_name"] = "lab-queue"
	p, _, err := Render(exampleDir(), v)
	if err != nil {
		t.Fatal(err)
	}
	pass := p.Evaluate(iampolicy.Request{Action: "iam:PassRole", Resource: "arn:aws:iam::123456789012:role/NodesmithNodeRole-my-cluster",
		Context: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}})
	receive := p.Evaluate(iampolicy.Request{Action: "sqs:ReceiveMessage", Resource: "arn:aws:sqs:us-east-1:123456789012:lab-queue"})
	if !pass.Allowed || !receive.Allowed {
		t.Errorf("PassRole of the named role %+v, receive from the named queue %+v", pass, receive)
	}
	def, _, err := Render(exampleDir(), labValues())
	if err != nil {
		t.Fatal(err)
	}
	if d := def.Evaluate(iampolicy.Request{Action: "iam:PassRole", Resource: "arn:aws:iam::123456789012:role/NodesmithNodeRole-lab",
		Context: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}}); !d.Allowed {
		t.Errorf("the default node role NodesmithNodeRole-lab may not be passed: %+v", d)
	}
}
