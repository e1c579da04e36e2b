package main

import (
	"flag"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/nodesmith/nodesmith/test/testenv"
)

// render renders the chart and returns the objects' YAML by kind.
func render(t *testing.T, values string) map[string][][]byte {
	t.Helper()
	list, err := testenv.RenderChart(t.Context(), "nodesmith", values)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string][][]byte{}
	for _, u := range list {
		b, err := sigsyaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		objs[u.GetKind()] = append(objs[u.GetKind()], b)
	}
	return objs
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// containerCommandLine is what the kubelet runs: args with $(VAR) expanded
// from the container's env, and that env (fieldRef values filled in).
func containerCommandLine(t *testing.T, objs map[string][][]byte) (*corev1.Container, []string, map[string]string) {
	t.Helper()
	if len(objs["Deployment"]) != 1 {
		t.Fatalf("want one Deployment, got %d", len(objs["Deployment"]))
	}
	var d appsv1.Deployment
	if err := sigsyaml.Unmarshal(objs["Deployment"][0], &d); err != nil {
		t.Fatal(err)
	}
	c := &d.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = "nodesmith"
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = "nodesmith-abc"
		case e.ValueFrom.ResourceFieldRef != nil:
			env[e.Name] = "1073741824"
		}
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = varRef.ReplaceAllStringFunc(a, func(m string) string {
			name := varRef.FindStringSubmatch(m)[1]
			v, ok := env[name]
			if !ok {
				t.Errorf("arg %q refers to $(%s), which the container's env does not define", a, name)
			}
			return v
		})
	}
	return c, args, env
}

// TestChartArgsParse renders the chart and parses the container's command
// line with the controller's own flag parser: every flag the chart passes
// must exist and mean what the value says.
func TestChartArgsParse(t *testing.T) {
	tests := []struct {
		name   string
		values string
		check  func(t *testing.T, o *Options)
	}{
		{"defaults", "clusterName: demo\n", func(t *testing.T, o *Options) {
			if o.ClusterName != "demo" || o.ClusterEndpoint != "" || o.ClusterCABundle != "" || o.AWSRegion != "" || !o.LeaderElect ||
				o.BatchIdle != time.Second || o.BatchMax != 10*time.Second || o.MetricsAddr != ":8080" || o.HealthAddr != ":8081" ||
				o.LeaderElectionNS != "nodesmith" || o.LogLevel != "info" || o.InterruptionQueue != "" {
				t.Errorf("options %+v", o)
			}
		}},
		{"every value", `
clusterName: prod
clusterEndpoint: https://ABC.gr7.eu-west-1.eks.amazonaws.com
clusterCABundle: Q0E=
clusterServiceCIDR: 172.20.0.0/16
interruptionQueue: prod-nodesmith
aws: {region: eu-west-1, credentials: irsa, roleArn: "arn:aws:iam::111122223333:role/NodesmithController-prod"}
batchIdleDuration: 2s
batchMaxDuration: 15s
logLevel: debug
featureGates: {SpotToSpotConsolidation: true, Disruption: false}
service: {metricsPort: 9090}
`, func(t *testing.T, o *Options) {
			if o.ClusterName != "prod" || o.ClusterEndpoint != "https://ABC.gr7.eu-west-1.eks.amazonaws.com" || o.ClusterCABundle != "Q0E=" ||
				o.ClusterServiceCIDR != "172.20.0.0/16" || o.InterruptionQueue != "prod-nodesmith" || o.AWSRegion != "eu-west-1" ||
				o.BatchIdle != 2*time.Second || o.BatchMax != 15*time.Second || o.LogLevel != "debug" || o.MetricsAddr != ":9090" ||
				!o.FeatureGates["SpotToSpotConsolidation"] || o.FeatureGates["Disruption"] {
				t.Errorf("options %+v", o)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := render(t, tt.values)
			c, args, env := containerCommandLine(t, objs)
			if !slices.Equal(c.Command, []string{"/controller"}) {
				t.Errorf("command %q, want the image's /controller", c.Command)
			}
			fs := flag.NewFlagSet("controller", flag.ContinueOnError)
			o, err := parse(fs, args, func(k string) string { return env[k] })
			if err != nil {
				t.Fatalf("the controller refuses the chart's command line %q: %v", args, err)
			}
			tt.check(t, o)
			port := strings.TrimPrefix(o.MetricsAddr, ":")
			for _, p := range c.Ports {
				if p.Name == "http-metrics" && p.ContainerPort != int32(atoi(t, port)) {
					t.Errorf("metrics port %d, controller listens on %s", p.ContainerPort, o.MetricsAddr)
				}
				if p.Name == "http" && ":"+itoa(p.ContainerPort) != o.HealthAddr {
					t.Errorf("probe port %d, controller serves probes on %s", p.ContainerPort, o.HealthAddr)
				}
			}
		})
	}
}

// rbacAudit is every API call the controllers make, by group, resource and
// verb (see the comment in templates/clusterrole.yaml for who makes it).
// The chart must grant exactly these: a missing one breaks a controller, an
// extra one is privilege nobody uses.
var rbacAudit = map[string][]string{
	"nodesmith.sh/nodeclaims":        {"create", "delete", "get", "list", "patch", "watch"},
	"nodesmith.sh/nodeclaims/status": {"patch"},
	"nodesmith.sh/nodepools":         {"get", "list", "watch"},
	"nodesmith.sh/nodepools/status":  {"patch"},
	// NodeOverlays reprice every controller's instance types (cloudprovider/overlay);
	// the nodeoverlay controller writes their status.
	"nodesmith.sh/nodeoverlays":        {"get", "list", "watch"},
	"nodesmith.sh/nodeoverlays/status": {"patch"},
	// Commitments: the cluster snapshot the solver plans from (state.Cluster).
	"nodesmith.sh/commitments":               {"get", "list", "watch"},
	"aws.nodesmith.sh/ec2nodeclasses":        {"get", "list", "patch", "watch"},
	"aws.nodesmith.sh/ec2nodeclasses/status": {"patch"},
	"/nodes":                                 {"delete", "get", "list", "patch", "watch"},
	"/pods":                                  {"delete", "get", "list", "watch"},
	"/pods/eviction":                         {"create"},
	"apps/daemonsets":                        {"get", "list", "watch"},
	"policy/poddisruptionbudgets":            {"get", "list", "watch"},
	"/persistentvolumeclaims":                {"get", "list", "watch"},
	"/persistentvolumes":                     {"get", "list", "watch"},
	"storage.k8s.io/storageclasses":          {"get", "list", "watch"},
	"/events":                                {"create", "patch"},
	"events.k8s.io/events":                   {"create", "patch"},
	// The capacitybuffer controller: the buffers, their templates and the
	// workloads a scalableRef names.
	"autoscaling.x-k8s.io/capacitybuffers":        {"get", "list", "watch"},
	"autoscaling.x-k8s.io/capacitybuffers/status": {"patch"},
	"/podtemplates":          {"get", "list", "watch"},
	"apps/deployments":       {"get", "list", "watch"},
	"apps/replicasets":       {"get", "list", "watch"},
	"apps/statefulsets":      {"get", "list", "watch"},
	"batch/jobs":             {"get", "list", "watch"},
	"karpenter.sh/nodepools": {"get", "list"},
	// The provisioningrequest controller: the requests (their pods' shape
	// is in the podtemplates above); the NodeClaims of an atomic request
	// are created and rolled back with the nodeclaims rights.
	"autoscaling.x-k8s.io/provisioningrequests":        {"get", "list", "watch"},
	"autoscaling.x-k8s.io/provisioningrequests/status": {"patch"},
}

func granted(rules []rbacv1.PolicyRule) map[string][]string {
	out := map[string][]string{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				k := g + "/" + res
				out[k] = append(out[k], r.Verbs...)
			}
		}
	}
	for k := range out {
		sort.Strings(out[k])
		out[k] = slices.Compact(out[k])
	}
	return out
}

func TestChartRBACIsTheAudit(t *testing.T) {
	objs := render(t, "clusterName: demo\n")
	var cr rbacv1.ClusterRole
	if err := sigsyaml.Unmarshal(objs["ClusterRole"][0], &cr); err != nil {
		t.Fatal(err)
	}
	got := granted(cr.Rules)
	for k, verbs := range rbacAudit {
		if !slices.Equal(got[k], verbs) {
			t.Errorf("%s: the ClusterRole grants %v, the controllers use %v", k, got[k], verbs)
		}
	}
	for k, verbs := range got {
		if _, ok := rbacAudit[k]; !ok {
			t.Errorf("%s: the ClusterRole grants %v, which no controller uses", k, verbs)
		}
	}
	var role rbacv1.Role
	if err := sigsyaml.Unmarshal(objs["Role"][0], &role); err != nil {
		t.Fatal(err)
	}
	// Leader election's Lease, and the status of the controller's own pods,
	// where the interruption handler reports its queue.
	if g := granted(role.Rules); len(g) != 2 || !slices.Equal(g["coordination.k8s.io/leases"], []string{"create", "get", "update"}) ||
		!slices.Equal(g["/pods/status"], []string{"patch"}) {
		t.Errorf("the namespaced Role grants %v, want leases get, create, update and pods/status patch", g)
	}
}

// TestChartCredentials: IRSA annotates the ServiceAccount with the role
// (and the regional STS endpoint); Pod Identity needs no annotation.
func TestChartCredentials(t *testing.T) {
	sa := func(values string) corev1.ServiceAccount {
		var s corev1.ServiceAccount
		if err := sigsyaml.Unmarshal(render(t, values)["ServiceAccount"][0], &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	irsa := sa("clusterName: demo\naws: {credentials: irsa, roleArn: 'arn:aws:iam::111122223333:role/NodesmithController-demo'}\n")
	if irsa.Annotations["eks.amazonaws.com/role-arn"] != "arn:aws:iam::111122223333:role/NodesmithController-demo" ||
		irsa.Annotations["eks.amazonaws.com/sts-regional-endpoints"] != "true" {
		t.Errorf("IRSA ServiceAccount annotations %v", irsa.Annotations)
	}
	if pi := sa("clusterName: demo\n"); len(pi.Annotations) != 0 {
		t.Errorf("Pod Identity ServiceAccount annotations %v, want none", pi.Annotations)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
