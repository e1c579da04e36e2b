package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/labkit"
)

// The lab runs the controller with the permissions a user installs: the
// chart's RBAC (its ServiceAccount, impersonated) and the IAM policy of
// examples/terraform (enforced by the simulated AWS). A permission either
// lacks shows up as a forbidden request in the controller's log or a
// denial recorded by the fake, and fails the lab naming it.

// forbiddenRE matches the API server's refusal as client-go logs it.
var forbiddenRE = regexp.MustCompile(`cannot (\w+) resource \\*"([^"\\]+)\\*" in API group \\*"([^"\\]*)\\*"`)

// forbidden lists the distinct refusals in the controller's log:
// "verb resource.group".
func forbidden(log string) []string {
	var out []string
	for _, m := range forbiddenRE.FindAllStringSubmatch(log, -1) {
		s := m[1] + " " + m[2]
		if m[3] != "" {
			s += "." + m[3]
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// checkPermissions fails t for every refusal the lab saw; it runs as a
// step after the scenarios and before permissionsAreNeeded provokes some.
func checkPermissions(t *testing.T) {
	for _, d := range lab.Perms.DeniedSince(0) {
		t.Errorf("the Terraform policy refused %s on %s", d.Action, d.Resource)
	}
	for _, log := range lab.ControllerLogs() {
		for _, f := range forbidden(log) {
			t.Errorf("the chart's RBAC refused %s", f)
		}
	}
}

// permissionsAreNeeded takes one permission away from each side and checks
// the controller's next launch is refused naming it, then gives it back.
func permissionsAreNeeded(t *testing.T) {
	c := kube()
	var cr rbacv1.ClusterRole
	if err := c.Get(ctx(), client.ObjectKey{Name: labkit.ChartNamespace}, &cr); err != nil {
		t.Fatalf("reading the chart's ClusterRole: %v", err)
	}
	orig := cr.DeepCopy()
	cr.Rules = nil
	for _, r := range orig.Rules {
		if slices.Contains(r.Resources, "nodeclaims") && slices.Contains(r.Verbs, "create") {
			r = *r.DeepCopy()
			r.Verbs = slices.DeleteFunc(r.Verbs, func(v string) bool { return v == "create" })
		}
		cr.Rules = append(cr.Rules, r)
	}
	if err := c.Update(ctx(), &cr); err != nil {
		t.Fatal(err)
	}
	logBefore := len(lab.ControllerLogs()[len(lab.ControllerLogs())-1])
	claimsBefore := len(claimsOf(t, spotPool))
	d := deployment("perm", "spot", 1, "500m", "128Mi")
	if err := c.Create(ctx(), d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, `the controller refused "create nodeclaims"`, func() error {
		logs := lab.ControllerLogs()
		if f := forbidden(logs[len(logs)-1][logBefore:]); slices.Contains(f, "create nodeclaims.nodesmith.sh") {
			t.Logf("without create on nodeclaims the controller logs: cannot %s", strings.Join(f, ", "))
			return nil
		}
		return fmt.Errorf("no refusal naming create nodeclaims in the controller's log yet")
	})
	if err := c.Get(ctx(), client.ObjectKey{Name: labkit.ChartNamespace}, &cr); err != nil {
		t.Fatal(err)
	}
	cr.Rules = orig.Rules
	// Before the role is whole again, take ec2:CreateFleet from the policy:
	// the next launch must be refused by AWS, naming it.
	n := lab.Perms.Count()
	lab.Perms.Enforce(lab.Perms.Policy().Without("ec2:CreateFleet"))
	if err := c.Update(ctx(), &cr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "AWS refused ec2:CreateFleet", func() error {
		for _, d := range lab.Perms.DeniedSince(n) {
			if d.Action == "ec2:CreateFleet" {
				t.Logf("without ec2:CreateFleet AWS refused %s on %s", d.Action, d.Resource)
				return nil
			}
		}
		return fmt.Errorf("no CreateFleet refusal yet")
	})
	// Whole again: the pod runs. (checkPermissions ran before this step.)
	lab.Perms.Enforce(lab.Perms.Policy())
	waitFor(t, 2*time.Minute, "the pod running once the permissions are back", func() error {
		if running, _, _ := podsOf(t, "perm"); running != 1 {
			return fmt.Errorf("%d running", running)
		}
		return nil
	})
	if err := c.Delete(ctx(), d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the step's nodes gone", func() error {
		if n := len(claimsOf(t, spotPool)); n > claimsBefore {
			return fmt.Errorf("%d nodeclaims, %d before the step", n, claimsBefore)
		}
		return nil
	})
}
