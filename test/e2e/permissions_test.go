package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/fakeaws/iampolicy"
	"github.com/nodesmith/nodesmith/pkg/fakeaws/tfpolicy"
	"github.com/nodesmith/nodesmith/test/testenv"
)

// The lab runs the controller with the permissions a user installs: the
// chart's RBAC (its ServiceAccount, impersonated) and the IAM policy of
// examples/terraform (enforced by the simulated AWS). A permission either
// lacks shows up as a forbidden request in the controller's log or a
// denial recorded by the fake, and fails the lab naming it.

const (
	chartNamespace = "nodesmith"
	chartSA        = "system:serviceaccount:nodesmith:nodesmith"
)

// permissions is what the lab granted and what was refused.
type permissions struct {
	srv    *fakeaws.Server
	policy *iampolicy.Policy

	mu      sync.Mutex
	denials []fakeaws.Denial
}

// renderChart renders the chart as a user installs it for the lab's
// cluster, with spot-to-spot consolidation on: the lab's pool is spot only,
// so without it consolidation could delete spot nodes but never replace one
// with a cheaper spot node.
func renderChart(ctx context.Context) ([]*unstructured.Unstructured, error) {
	return testenv.RenderChart(ctx, chartNamespace, "clusterName: "+labCluster+"\nfeatureGates:\n  SpotToSpotConsolidation: true\n")
}

// chartCommandLine is the controller container's command line and
// environment from the rendered chart's Deployment, as the kubelet would
// run it: args with $(VAR) expanded from the container's literal env. Env
// taken from the Pod (its name and namespace, its memory limit) is left
// out: the lab's controller is a process, not a Pod.
func chartCommandLine(objs []*unstructured.Unstructured) ([]string, []string, error) {
	var dep *appsv1.Deployment
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			dep = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dep); err != nil {
				return nil, nil, fmt.Errorf("reading the chart's Deployment: %w", err)
			}
		}
	}
	if dep == nil || len(dep.Spec.Template.Spec.Containers) == 0 {
		return nil, nil, fmt.Errorf("the chart rendered no Deployment with a container")
	}
	c := dep.Spec.Template.Spec.Containers[0]
	vars := map[string]string{}
	var env []string
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			continue
		}
		vars[e.Name] = e.Value
		env = append(env, e.Name+"="+e.Value)
	}
	var args []string
	for _, a := range c.Args {
		args = append(args, os.Expand(strings.ReplaceAll(strings.ReplaceAll(a, "$(", "${"), ")", "}"), func(k string) string { return vars[k] }))
	}
	return args, env, nil
}

// applyChartRBAC creates the chart's ServiceAccount, roles and bindings and
// returns a kubeconfig that impersonates the ServiceAccount.
func applyChartRBAC(ctx context.Context, env *testenv.Env, objs []*unstructured.Unstructured) (string, error) {
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartNamespace}}); err != nil {
		return "", fmt.Errorf("creating namespace %s: %w", chartNamespace, err)
	}
	applied := 0
	for _, u := range objs {
		switch u.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if err := env.Client.Create(ctx, u); err != nil {
				return "", fmt.Errorf("applying the chart's %s %s: %w", u.GetKind(), u.GetName(), err)
			}
			applied++
		}
	}
	if applied < 5 {
		return "", fmt.Errorf("the chart rendered %d RBAC objects, want its ServiceAccount, ClusterRole, Role and their bindings", applied)
	}
	cfg, err := clientcmd.LoadFromFile(env.KubeconfigPath)
	if err != nil {
		return "", err
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = chartSA
	}
	path := filepath.Join(env.Dir, "kubeconfig-nodesmith")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", err
	}
	return path, nil
}

// enforcePolicy renders examples/terraform's controller policy for the lab
// and has the simulated AWS authorize every request against it.
func enforcePolicy(srv *fakeaws.Server) (*permissions, error) {
	p, _, err := tfpolicy.Render(filepath.Join(testenv.RepoRoot(), "examples", "terraform"), tfpolicy.Values{
		Variables: map[string]string{"cluster_name": labCluster, "node_role_name": exampleNodeRole},
		AccountID: "123456789012", Region: labRegion,
	})
	if err != nil {
		return nil, fmt.Errorf("rendering the Terraform policy: %w", err)
	}
	perms := &permissions{srv: srv, policy: p}
	perms.enforce(p)
	return perms, nil
}

func (p *permissions) enforce(policy *iampolicy.Policy) {
	p.srv.EnforcePolicy(policy, "")
	p.srv.OnDenial(func(d fakeaws.Denial) {
		p.mu.Lock()
		p.denials = append(p.denials, d)
		p.mu.Unlock()
	})
}

func (p *permissions) deniedSince(n int) []fakeaws.Denial {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]fakeaws.Denial(nil), p.denials[n:]...)
}

func (p *permissions) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.denials)
}

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
	for _, d := range lab.Perms.deniedSince(0) {
		t.Errorf("the Terraform policy refused %s on %s", d.Action, d.Resource)
	}
	for _, log := range lab.controllerLogs() {
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
	if err := c.Get(ctx(), client.ObjectKey{Name: chartNamespace}, &cr); err != nil {
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
	logBefore := len(lab.controllerLogs()[len(lab.controllerLogs())-1])
	claimsBefore := len(claimsOf(t, spotPool))
	d := deployment("perm", "spot", 1, "500m", "128Mi")
	if err := c.Create(ctx(), d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, `the controller refused "create nodeclaims"`, func() error {
		logs := lab.controllerLogs()
		if f := forbidden(logs[len(logs)-1][logBefore:]); slices.Contains(f, "create nodeclaims.nodesmith.sh") {
			t.Logf("without create on nodeclaims the controller logs: cannot %s", strings.Join(f, ", "))
			return nil
		}
		return fmt.Errorf("no refusal naming create nodeclaims in the controller's log yet")
	})
	if err := c.Get(ctx(), client.ObjectKey{Name: chartNamespace}, &cr); err != nil {
		t.Fatal(err)
	}
	cr.Rules = orig.Rules
	// Before the role is whole again, take ec2:CreateFleet from the policy:
	// the next launch must be refused by AWS, naming it.
	n := lab.Perms.count()
	lab.Perms.enforce(lab.Perms.policy.Without("ec2:CreateFleet"))
	if err := c.Update(ctx(), &cr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "AWS refused ec2:CreateFleet", func() error {
		for _, d := range lab.Perms.deniedSince(n) {
			if d.Action == "ec2:CreateFleet" {
				t.Logf("without ec2:CreateFleet AWS refused %s on %s", d.Action, d.Resource)
				return nil
			}
		}
		return fmt.Errorf("no CreateFleet refusal yet")
	})
	// Whole again: the pod runs. (checkPermissions ran before this step.)
	lab.Perms.enforce(lab.Perms.policy)
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

// controllerLogs are the logs of every controller process the lab ran, in
// order.
func (l *Lab) controllerLogs() []string {
	var out []string
	for _, path := range l.logs {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		out = append(out, string(b))
	}
	return out
}
