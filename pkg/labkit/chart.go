package labkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodesmith/nodesmith/test/testenv"
)

// The chart is rendered as release nodesmith in namespace nodesmith; the
// controller runs as its ServiceAccount.
const (
	ChartNamespace = "nodesmith"
	ChartSA        = "system:serviceaccount:nodesmith:nodesmith"
)

// ChartCommandLine is the controller container's command line and
// environment from the rendered chart's Deployment, as the kubelet would
// run it: args with $(VAR) expanded from the container's literal env. Env
// taken from the Pod (its name and namespace, its memory limit) is left
// out: the lab's controller is a process, not a Pod.
func ChartCommandLine(objs []*unstructured.Unstructured) ([]string, []string, error) {
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

// ApplyChartRBAC creates the chart's namespace, ServiceAccount, roles and
// bindings and returns a kubeconfig that impersonates the ServiceAccount.
func ApplyChartRBAC(ctx context.Context, env *testenv.Env, objs []*unstructured.Unstructured) (string, error) {
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ChartNamespace}}); err != nil {
		return "", fmt.Errorf("creating namespace %s: %w", ChartNamespace, err)
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
		ai.Impersonate = ChartSA
	}
	path := filepath.Join(env.Dir, "kubeconfig-nodesmith")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", err
	}
	return path, nil
}
