package tfpolicy

import (
	"maps"
	"slices"
	"testing"

	"github.com/nodesmith/nodesmith/pkg/fakeaws/iampolicy"
)

const oidcARN = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABCDEF0123456789"

func renderDoc(t *testing.T, name string, vars map[string]string) *Document {
	t.Helper()
	m, err := Load(exampleDir())
	if err != nil {
		t.Fatal(err)
	}
	v := labValues()
	maps.Copy(v.Variables, vars)
	d, err := m.Document(name, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.JSON(); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestIRSATrust: with credentials=irsa the controller role trusts only the
// cluster's OIDC provider, only for the chart's ServiceAccount, only for STS.
func TestIRSATrust(t *testing.T) {
	d := renderDoc(t, "controller_trust", map[string]string{"credentials": "irsa", "oidc_provider_arn": oidcARN})
	if len(d.Statement) != 1 {
		t.Fatalf("statements %+v, want exactly the IRSA one", d.Statement)
	}
	st := d.Statement[0]
	if st.Effect != "Allow" || !slices.Equal(st.Action, iampolicy.StringList{"sts:AssumeRoleWithWebIdentity"}) {
		t.Errorf("effect %s actions %v, want Allow sts:AssumeRoleWithWebIdentity", st.Effect, st.Action)
	}
	if len(st.Principal) != 1 || !slices.Equal(st.Principal["Federated"], iampolicy.StringList{oidcARN}) {
		t.Errorf("principal %v, want only the OIDC provider", st.Principal)
	}
	issuer := "oidc.eks.us-east-1.amazonaws.com/id/ABCDEF0123456789"
	want := map[string]map[string]iampolicy.StringList{"StringEquals": {
		issuer + ":sub": {"system:serviceaccount:nodesmith:nodesmith"},
		issuer + ":aud": {"sts.amazonaws.com"},
	}}
	if !conditionsEqual(st.Condition, want) {
		t.Errorf("conditions %v, want %v (the chart's default namespace and ServiceAccount)", st.Condition, want)
	}
}

// TestPodIdentityTrust: with credentials=podIdentity only the EKS Pod
// Identity service may assume the role (and tag the session).
func TestPodIdentityTrust(t *testing.T) {
	d := renderDoc(t, "controller_trust", map[string]string{"credentials": "podIdentity"})
	if len(d.Statement) != 1 {
		t.Fatalf("statements %+v, want exactly the Pod Identity one", d.Statement)
	}
	st := d.Statement[0]
	if st.Effect != "Allow" || !slices.Equal(st.Action, iampolicy.StringList{"sts:AssumeRole", "sts:TagSession"}) || len(st.Condition) != 0 {
		t.Errorf("effect %s actions %v conditions %v, want Allow sts:AssumeRole and sts:TagSession", st.Effect, st.Action, st.Condition)
	}
	if len(st.Principal) != 1 || !slices.Equal(st.Principal["Service"], iampolicy.StringList{"pods.eks.amazonaws.com"}) {
		t.Errorf("principal %v, want only pods.eks.amazonaws.com", st.Principal)
	}
}

// TestInterruptionQueuePolicy: EventBridge may send to the queue and
// nothing else is allowed; plain-HTTP access is denied; the queue it
// guards is the one the controller's policy lets it read.
func TestInterruptionQueuePolicy(t *testing.T) {
	d := renderDoc(t, "interruption_queue", nil)
	queue := "arn:aws:sqs:us-east-1:123456789012:lab-nodesmith"
	var allows, denies int
	for _, st := range d.Statement {
		if !slices.Equal(st.Resource, iampolicy.StringList{queue}) {
			t.Errorf("statement %s on %v, want only the queue %s", st.Sid, st.Resource, queue)
		}
		switch st.Effect {
		case "Allow":
			allows++
			if !slices.Equal(st.Action, iampolicy.StringList{"sqs:SendMessage"}) {
				t.Errorf("allow %s grants %v, want only sqs:SendMessage", st.Sid, st.Action)
			}
			if len(st.Principal) != 1 || !slices.Contains(st.Principal["Service"], "events.amazonaws.com") {
				t.Errorf("allow %s to %v, want AWS services only, EventBridge among them", st.Sid, st.Principal)
			}
			for _, p := range st.Principal["Service"] {
				if p == "*" {
					t.Errorf("allow %s to any principal", st.Sid)
				}
			}
		case "Deny":
			denies++
			want := map[string]map[string]iampolicy.StringList{"Bool": {"aws:SecureTransport": {"false"}}}
			if !slices.Equal(st.Action, iampolicy.StringList{"sqs:*"}) || !conditionsEqual(st.Condition, want) {
				t.Errorf("deny %s: actions %v conditions %v, want sqs:* without TLS", st.Sid, st.Action, st.Condition)
			}
		}
	}
	if allows != 1 || denies != 1 {
		t.Errorf("%d allow and %d deny statements, want one each", allows, denies)
	}
	p, _, err := Render(exampleDir(), labValues())
	if err != nil {
		t.Fatal(err)
	}
	reads := false
	for _, st := range p.Statement {
		reads = reads || slices.Contains(st.Action, "sqs:ReceiveMessage") && slices.Equal(st.Resource, iampolicy.StringList{queue})
	}
	if !reads {
		t.Errorf("the controller's policy does not let it receive from %s", queue)
	}
}

// TestSpotServiceLinkedRole: the role EC2 needs for a first spot launch is
// created only when asked (an account has at most one, and many have it).
func TestSpotServiceLinkedRole(t *testing.T) {
	m, err := Load(exampleDir())
	if err != nil {
		t.Fatal(err)
	}
	blocks := m.Blocks("resource", "aws_iam_service_linked_role")
	if len(blocks) != 1 {
		t.Fatalf("%d aws_iam_service_linked_role resources, want one", len(blocks))
	}
	b := blocks[0]
	for name, want := range map[bool]string{true: "1", false: "0"} {
		v := labValues()
		v.Variables["create_spot_service_linked_role"] = map[bool]string{true: "true", false: "false"}[name]
		ctx, err := m.EvalContext(v)
		if err != nil {
			t.Fatal(err)
		}
		svc, diags := b.Body.Attributes["aws_service_name"].Expr.Value(ctx)
		if diags.HasErrors() || svc.AsString() != "spot.amazonaws.com" {
			t.Fatalf("aws_service_name %v %v, want spot.amazonaws.com", svc, diags)
		}
		count, diags := b.Body.Attributes["count"].Expr.Value(ctx)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		if got := count.AsBigFloat().String(); got != want {
			t.Errorf("create_spot_service_linked_role=%v: count %s, want %s", name, got, want)
		}
	}
}

func conditionsEqual(a, b map[string]map[string]iampolicy.StringList) bool {
	if len(a) != len(b) {
		return false
	}
	for op, keys := range a {
		if len(keys) != len(b[op]) {
			return false
		}
		for k, v := range keys {
			if !slices.Equal(v, b[op][k]) {
				return false
			}
		}
	}
	return true
}
