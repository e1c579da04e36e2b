package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/test/testenv"
)

const chartNamespace = "nodesmith"

// helm runs the helm binary tools/build.sh built; a missing binary fails the
// test with the command that builds it.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := testenv.HelmPath()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, args...)
	// No user config, cache or repositories: the chart must render offline.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

func chartDir() string { return filepath.Join(testenv.RepoRoot(), "charts", "nodesmith") }

func valuesFile(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHelmLint(t *testing.T) {
	for name, extra := range map[string][]string{
		"defaults":                nil,
		"alerts and dashboard on": {"--set", "prometheusRule.enabled=true", "--set", "grafanaDashboard.enabled=true", "--set", "serviceMonitor.enabled=true"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := helm(t, append([]string{"lint", "--strict", chartDir(), "--set", "clusterName=demo"}, extra...)...)
			if err != nil {
				t.Fatalf("helm lint: %v\n%s", err, out)
			}
		})
	}
}

// TestHelmTemplateIsAccepted renders the chart with several value sets and
// sends every object to the API server as a server-side dry run, which runs
// the full validation (and the CRD rules for the CRDs the chart ships).
func TestHelmTemplateIsAccepted(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartNamespace}}
	if err := env.Client.Create(t.Context(), ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		values string
		check  func(t *testing.T, objs map[string]*unstructured.Unstructured)
	}{
		{"defaults with pod identity", "clusterName: demo\n", func(t *testing.T, objs map[string]*unstructured.Unstructured) {
			d := deployment(t, objs)
			if *d.Spec.Replicas != 2 {
				t.Errorf("replicas = %d, want 2", *d.Spec.Replicas)
			}
			c := d.Spec.Template.Spec.Containers[0]
			wantArgs := []string{"--cluster-name=$(CLUSTER_NAME)", "--batch-idle-duration=1s", "--batch-max-duration=10s",
				"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081", "--leader-elect", "--log-level=info"}
			if !slices.Equal(c.Command, []string{"/controller"}) || !slices.Equal(c.Args, wantArgs) {
				t.Errorf("command %q args %q, want /controller %q", c.Command, c.Args, wantArgs)
			}
			if env := envOf(c); env["CLUSTER_NAME"] != "demo" {
				t.Errorf("CLUSTER_NAME = %q", env["CLUSTER_NAME"])
			}
			if d.Spec.Template.Spec.PriorityClassName != "system-cluster-critical" {
				t.Errorf("priorityClassName = %q", d.Spec.Template.Spec.PriorityClassName)
			}
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || d.Spec.Template.Spec.SecurityContext.RunAsNonRoot == nil {
				t.Errorf("container must be non-root with a read-only root: %+v", sc)
			}
			if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
				t.Errorf("probes %s %s", c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path)
			}
			if a := objs["ServiceAccount/nodesmith"].GetAnnotations(); len(a) != 0 {
				t.Errorf("pod identity needs no ServiceAccount annotation, got %v", a)
			}
			if _, ok := objs["PodDisruptionBudget/nodesmith"]; !ok {
				t.Errorf("no PodDisruptionBudget")
			}
		}},
		{"IRSA and every flag", `
clusterName: prod-eu
clusterEndpoint: https://ABC.gr7.eu-west-1.eks.amazonaws.com
interruptionQueue: prod-eu-nodesmith
rebalanceMode: drain
interruptionWorkers: 4
aws: {region: eu-west-1, credentials: irsa, roleArn: "arn:aws:iam::111122223333:role/nodesmith"}
logLevel: debug
featureGates: {SpotToSpotConsolidation: true, Disruption: false}
clusterCABundle: LS0tLS1CRUdJTi0tLS0t
image: {digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
podDisruptionBudget: {enabled: true, minAvailable: 1}
`, func(t *testing.T, objs map[string]*unstructured.Unstructured) {
			c := deployment(t, objs).Spec.Template.Spec.Containers[0]
			for _, want := range []string{"--cluster-endpoint=$(CLUSTER_ENDPOINT)", "--interruption-queue=$(INTERRUPTION_QUEUE)",
				"--rebalance-mode=drain", "--interruption-workers=4",
				"--aws-region=$(AWS_REGION)", "--log-level=debug", "--feature-gates=Disruption=false,SpotToSpotConsolidation=true"} {
				if !slices.Contains(c.Args, want) {
					t.Errorf("args %q lack %q", c.Args, want)
				}
			}
			env := envOf(c)
			if env["CLUSTER_ENDPOINT"] != "https://ABC.gr7.eu-west-1.eks.amazonaws.com" || env["INTERRUPTION_QUEUE"] != "prod-eu-nodesmith" || env["AWS_REGION"] != "eu-west-1" ||
				env["CLUSTER_CA_BUNDLE"] != "LS0tLS1CRUdJTi0tLS0t" {
				t.Errorf("env = %v", env)
			}
			if !strings.HasSuffix(c.Image, "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef") {
				t.Errorf("image = %s, want pinned by digest", c.Image)
			}
			if a := objs["ServiceAccount/nodesmith"].GetAnnotations(); a["eks.amazonaws.com/role-arn"] != "arn:aws:iam::111122223333:role/nodesmith" {
				t.Errorf("ServiceAccount annotations = %v, want the IRSA role", a)
			}
			// Decoded YAML numbers are float64.
			if v, _, _ := unstructured.NestedFieldNoCopy(objs["PodDisruptionBudget/nodesmith"].Object, "spec", "minAvailable"); v != float64(1) {
				t.Errorf("PDB minAvailable = %v, want 1", v)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := helm(t, "template", "nodesmith", chartDir(), "--namespace", chartNamespace, "--include-crds",
				"--values", valuesFile(t, tt.values))
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, out)
			}
			list, err := decodeObjects([]byte(out))
			if err != nil {
				t.Fatalf("decoding the rendered chart: %v", err)
			}
			objs := map[string]*unstructured.Unstructured{}
			for _, o := range list {
				objs[o.GetKind()+"/"+o.GetName()] = o
				ac := client.ApplyConfigurationFromUnstructured(o.DeepCopy())
				if err := env.Client.Apply(t.Context(), ac, client.FieldOwner("helm-test"), client.ForceOwnership, client.DryRunAll); err != nil {
					t.Errorf("API server refused %s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
			for _, kind := range []string{"CustomResourceDefinition", "Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
				"Role", "RoleBinding", "Service", "PodDisruptionBudget"} {
				if !slices.ContainsFunc(list, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind }) {
					t.Errorf("the chart renders no %s", kind)
				}
			}
			tt.check(t, objs)
		})
	}
}

// TestHelmRefusesBadValues checks that a missing or wrong value stops the
// install with a message that says what to set.
func TestHelmRefusesBadValues(t *testing.T) {
	tests := []struct {
		name, values, want string
	}{
		{"missing clusterName", "{}\n", "clusterName is required: set it to your EKS cluster's name"},
		{"IRSA without a role", "clusterName: demo\naws: {credentials: irsa}\n", "aws.roleArn is required when aws.credentials is irsa"},
		{"unknown credentials mode", "clusterName: demo\naws: {credentials: keys}\n", `aws.credentials must be podIdentity, irsa or none, not "keys"`},
		{"misspelt value", "clusterName: demo\ninterruptionqueue: q\n", "additional properties 'interruptionqueue' not allowed"},
		{"unknown log level", "clusterName: demo\nlogLevel: warn\n", "logLevel"},
		{"unknown rebalance mode", "clusterName: demo\nrebalanceMode: sometimes\n", "rebalanceMode"},
		{"no interruption workers", "clusterName: demo\ninterruptionWorkers: 0\n", "interruptionWorkers"},
		{"replicas as a word", "clusterName: demo\nreplicas: two\n", "replicas"},
		{"own ServiceAccount without a name", "clusterName: demo\nserviceAccount: {create: false}\n", "serviceAccount.name is required when serviceAccount.create is false"},
		{"annotations for a ServiceAccount the chart does not create", "clusterName: demo\nserviceAccount: {create: false, name: mine, annotations: {a: b}}\n",
			"serviceAccount.annotations apply only to a ServiceAccount the chart creates"},
		{"IRSA role for a ServiceAccount the chart does not create", "clusterName: demo\nserviceAccount: {create: false, name: mine}\naws: {credentials: irsa, roleArn: 'arn:aws:iam::111122223333:role/x'}\n",
			"annotate your ServiceAccount with eks.amazonaws.com/role-arn yourself"},
		{"role ARN without a credentials mode that uses it", "clusterName: demo\naws: {credentials: none, roleArn: 'arn:aws:iam::111122223333:role/x'}\n",
			"aws.roleArn does nothing when aws.credentials is none"},
		{"role ARN that is not one", "clusterName: demo\naws: {credentials: irsa, roleArn: nodesmith}\n", "roleArn"},
		{"service CIDR that is not one", "clusterName: demo\nclusterServiceCIDR: ten-dot\n", "clusterServiceCIDR"},
		{"endpoint without https", "clusterName: demo\nclusterEndpoint: api.example.com\n", "clusterEndpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := helm(t, "template", "nodesmith", chartDir(), "--namespace", chartNamespace, "--values", valuesFile(t, tt.values))
			if err == nil {
				t.Fatalf("helm template succeeded, want it to fail with %q", tt.want)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("output\n  %s\nwant it to contain\n  %s", out, tt.want)
			}
		})
	}
}

// TestHelmServiceMonitor checks the optional ServiceMonitor scrapes the
// metrics Service (rendered only: the test apiserver has no Prometheus
// Operator CRDs).
func TestHelmServiceMonitor(t *testing.T) {
	out, err := helm(t, "template", "nodesmith", chartDir(), "--namespace", chartNamespace,
		"--values", valuesFile(t, "clusterName: demo\nserviceMonitor: {enabled: true, additionalLabels: {release: prom}}\n"))
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	list, err := decodeObjects([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	var sm, svc *unstructured.Unstructured
	for _, o := range list {
		switch o.GetKind() {
		case "ServiceMonitor":
			sm = o
		case "Service":
			svc = o
		}
	}
	if sm == nil || svc == nil {
		t.Fatalf("want a ServiceMonitor and a Service, got %d objects", len(list))
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range sel {
		if svc.GetLabels()[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s, the Service has %q", k, v, svc.GetLabels()[k])
		}
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(eps) != 1 || len(ports) != 1 || eps[0].(map[string]any)["port"] != ports[0].(map[string]any)["name"] {
		t.Errorf("endpoints %v do not name the Service port %v", eps, ports)
	}
	if sm.GetLabels()["release"] != "prom" {
		t.Errorf("labels = %v, want release=prom", sm.GetLabels())
	}
}

func deployment(t *testing.T, objs map[string]*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	u, ok := objs["Deployment/nodesmith"]
	if !ok {
		t.Fatalf("no Deployment/nodesmith among %d objects", len(objs))
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func envOf(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

// TestHelmNotes checks that the install notes tell the user how the
// controller gets its AWS credentials, for each credentials mode.
func TestHelmNotes(t *testing.T) {
	tests := []struct {
		name, values  string
		want, notWant []string
	}{
		{"pod identity", "clusterName: demo\n", []string{
			"aws eks create-pod-identity-association",
			"--cluster-name demo",
			"--namespace nodesmith",
			"--service-account nodesmith",
			"pods.eks.amazonaws.com",
			"Spot interruption handling is OFF",
		}, []string{"eks.amazonaws.com/role-arn"}},
		{"IRSA", "clusterName: demo\ninterruptionQueue: q\naws: {credentials: irsa, roleArn: 'arn:aws:iam::111122223333:role/nodesmith'}\n", []string{
			"assumes arn:aws:iam::111122223333:role/nodesmith",
			"system:serviceaccount:nodesmith:nodesmith",
			"nodesmith.sh/discovery=demo",
			"Interruption handling reads the SQS queue q",
			"Rebalance recommendations: prespin",
			"nodesmith.sh/InterruptionQueueReady",
		}, []string{"interruption handling is OFF", "pod-identity-association"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A client-side dry run still asks the cluster its version: point
			// it at the test apiserver.
			out, err := helm(t, "install", "nodesmith", chartDir(), "--namespace", chartNamespace, "--dry-run=client",
				"--kubeconfig", env.KubeconfigPath, "--values", valuesFile(t, tt.values))
			if err != nil {
				t.Fatalf("helm install --dry-run: %v\n%s", err, out)
			}
			_, notes, ok := strings.Cut(out, "NOTES:")
			if !ok {
				t.Fatalf("no NOTES in\n%s", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(notes, w) {
					t.Errorf("NOTES lack %q:\n%s", w, notes)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(notes, w) {
					t.Errorf("NOTES should not say %q:\n%s", w, notes)
				}
			}
		})
	}
}
