package aws

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/clusterinfo"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/fakeaws/iampolicy"
	"github.com/nodesmith/nodesmith/pkg/fakeaws/tfpolicy"
)

// examplePolicy is examples/terraform's controller policy for the test cluster.
func examplePolicy(t *testing.T) *iampolicy.Policy {
	t.Helper()
	p, _, err := tfpolicy.Render(filepath.Join("..", "..", "..", "examples", "terraform"), tfpolicy.Values{
		Variables: map[string]string{"cluster_name": testCluster}, AccountID: "123456789012", Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// policyEnv is a world that authorizes every call against policy, and a
// provider with every client (EC2, SSM, IAM, Pricing) discovering offerings.
func policyEnv(t *testing.T, policy *iampolicy.Policy) *env {
	nodeRole := "NodesmithNodeRole-" + testCluster // the role examples/terraform makes
	e := newEnv(t, envOpts{iam: true, pricing: true,
		provider: func(o *Options) { o.DiscoverInstanceTypes = true },
		world:    func(o *fakeaws.Options) { o.Roles = []string{nodeRole}; o.EnforceInstanceProfiles = true },
		server:   func(s *fakeaws.Server) { s.EnforcePolicy(policy, "") },
	})
	nc := defaultNodeClass()
	nc.Spec.Role = aws.String(nodeRole)
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "ml"}}}
	e.addNodeClass(nc)
	for _, z := range e.world.Options().Zones {
		if _, err := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: z, Total: 1, Tags: map[string]string{"team": "ml"}}); err == nil {
			break
		}
	}
	return e
}

// lifecycle runs everything the controller does against AWS: discovery of
// the cluster, the catalog refreshes, resolving a node class (which makes
// its instance profile), spot and on-demand launches, a termination,
// launch template collection and the instance profile's deletion. It stops
// at the first error.
func lifecycle(e *env) error {
	ctx := context.Background()
	client := eks.NewFromConfig(e.cfg, func(o *eks.Options) { o.BaseEndpoint = aws.String(e.url) })
	if _, err := clusterinfo.Discover(ctx, clusterinfo.Settings{ClusterName: testCluster, KubernetesVersion: "1.37"}, clusterinfo.Sources{EKS: client}); err != nil {
		return err
	}
	if err := e.p.Refresh(ctx); err != nil {
		return err
	}
	nc, err := e.getNodeClass(ctx, "default")
	if err != nil {
		return err
	}
	if _, err := e.p.Resolve(ctx, nc); err != nil {
		return err
	}
	var launched []*nsv1.NodeClaim
	if len(e.world.CapacityReservations()) == 1 {
		// A launch into the class's capacity reservation.
		id := e.world.CapacityReservations()[0].ID
		c, err := e.p.Create(ctx, newClaim("claim-reserved", reqIn(corev1.LabelInstanceTypeStable, "m5.large"), reqIn(nsv1.LabelCapacityType, nsv1.CapacityTypeReserved), reqIn(awsv1.LabelCapacityReservationID, id)))
		if err != nil {
			return err
		}
		if c.Labels[awsv1.LabelCapacityReservationID] != id {
			return fmt.Errorf("the reserved claim did not launch into %s: labels %v", id, c.Labels)
		}
	}
	for _, ct := range []string{nsv1.CapacityTypeSpot, nsv1.CapacityTypeOnDemand} {
		c, err := e.p.Create(ctx, newClaim("claim-"+ct, reqIn(corev1.LabelInstanceTypeStable, "m5.large"), reqIn(nsv1.LabelCapacityType, ct)))
		if err != nil {
			return err
		}
		launched = append(launched, c)
	}
	if _, err := e.p.List(ctx); err != nil {
		return err
	}
	if err := e.p.Delete(ctx, launched[0]); err != nil {
		return err
	}
	e.clock.Step(2 * time.Hour)
	deleted, err := e.p.GarbageCollectLaunchTemplates(ctx)
	if err != nil {
		return err
	}
	if len(deleted) == 0 {
		return errors.New("no launch template was collected")
	}
	return e.p.DeleteInstanceProfile(ctx, nc)
}

// TestProviderWorksUnderTheExamplePolicy runs the whole lifecycle with the
// simulated AWS enforcing examples/terraform's policy: it must be enough.
func TestProviderWorksUnderTheExamplePolicy(t *testing.T) {
	e := policyEnv(t, examplePolicy(t))
	if err := lifecycle(e); err != nil {
		t.Fatalf("under the example policy: %v\ndenied: %+v", err, e.srv.Denials())
	}
	if d := e.srv.Denials(); len(d) > 0 {
		t.Errorf("requests denied on the way: %+v", d)
	}
	used := e.srv.AuthorizedActions()
	for _, a := range []string{"ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateTags", "iam:PassRole", "ec2:TerminateInstances", "ec2:DeleteLaunchTemplate",
		"iam:CreateInstanceProfile", "iam:DeleteInstanceProfile", "pricing:GetProducts", "eks:DescribeCluster", "ssm:GetParameter"} {
		if used[a] == 0 {
			t.Errorf("the lifecycle never needed %s: the enforcement is not exercised (used: %v)", a, used)
		}
	}
}

// TestEveryPermissionIsNeeded removes, one at a time, each permission the
// lifecycle used: the lifecycle must then fail, with an error that names
// the missing permission (so a user can fix the policy from the message).
func TestEveryPermissionIsNeeded(t *testing.T) {
	policy := examplePolicy(t)
	full := policyEnv(t, policy)
	if err := lifecycle(full); err != nil {
		t.Fatal(err)
	}
	var actions []string
	for a := range full.srv.AuthorizedActions() {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		t.Run(a, func(t *testing.T) {
			e := policyEnv(t, policy.Without(a))
			err := lifecycle(e)
			if err == nil {
				t.Fatalf("the lifecycle succeeded without %s", a)
			}
			if !strings.Contains(err.Error(), a) {
				t.Errorf("the error does not name %s: %v", a, err)
			}
		})
	}
	unused := tfpolicy.MissingActions(&iampolicy.Policy{Statement: []iampolicy.Statement{{Effect: "Allow", Action: actions}}}, policy.Actions())
	t.Logf("granted but not needed by this lifecycle (other paths need them): %v", unused)
}

// TestTagConditionsHold: the policy lets the controller terminate only
// instances of its cluster.
func TestTagConditionsHold(t *testing.T) {
	e := policyEnv(t, examplePolicy(t))
	if err := lifecycle(e); err != nil {
		t.Fatal(err)
	}
	// The instance still running now carries another cluster's tag.
	id := ""
	for _, in := range e.world.Instances() {
		if in.State != fakeaws.StateTerminated && in.State != fakeaws.StateShuttingDown {
			id = in.ID
		}
	}
	if id == "" {
		t.Fatal("no running instance left by the lifecycle")
	}
	if err := e.world.CreateTags([]string{id}, map[string]string{"nodesmith.sh/cluster": "another"}); err != nil {
		t.Fatal(err)
	}
	c := &nsv1.NodeClaim{}
	c.Name = "foreign"
	c.Status.ProviderID = fmt.Sprintf("aws:///us-east-1a/%s", id)
	err := e.p.Delete(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "UnauthorizedOperation") || !strings.Contains(err.Error(), "ec2:TerminateInstances") {
		t.Fatalf("terminating another cluster's instance: %v, want UnauthorizedOperation naming ec2:TerminateInstances", err)
	}
}
