package testenv

import (
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestRestartAPIServer stops kube-apiserver and starts it again: the
// clients built before the restart (the Env's, and one from the kubeconfig
// file as a separate process would read it) read what was written before,
// so port, serving certificate, client CA and etcd data all survived.
func TestRestartAPIServer(t *testing.T) {
	e, err := Start(Options{FullAdmission: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	ctx := t.Context()
	cfg, err := clientcmd.BuildConfigFromFlags("", e.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "before-restart"}, Data: map[string]string{"k": "v"}}
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	stop := time.Now()
	killed, err := e.StopAPIServer(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if killed {
		t.Errorf("an idle kube-apiserver did not stop within 30 s of SIGTERM:\n%s", e.APIServerLogTail(20))
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err == nil {
		t.Fatal("the apiserver answered while stopped")
	}
	stopped := time.Now()
	if err := e.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver stopped in %s, started again in %s", stopped.Sub(stop).Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond))
	for name, c := range map[string]client.Client{"the Env's client": e.Client, "a client from the kubeconfig file": fromFile} {
		got := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
			t.Errorf("%s after the restart: %v", name, err)
		} else if got.Data["k"] != "v" {
			t.Errorf("%s read %v after the restart, want the data written before", name, got.Data)
		}
	}
	if exited := e.Exited(); len(exited) > 0 {
		t.Errorf("processes exited: %v", exited)
	}
}

// TestRestartedAPIServerNeverRefusesRBAC is lab steps 7d and 8's failure
// in small: a client bound by RBAC (an impersonated ServiceAccount with a
// Role, as the controller is) asks kube-apiserver without pause while it is
// stopped and started again. It may be unable to connect, but it must
// never be refused with 403: connecting straight to the restarted port, it
// was, before the RBAC authorizer had synced; through the Env's front,
// which forwards only once /readyz passes, it is not.
func TestRestartedAPIServerNeverRefusesRBAC(t *testing.T) {
	e, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	ctx := t.Context()
	const user = "system:serviceaccount:default:probe"
	for _, o := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "probe"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}},
	} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, ok func() bool) {
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("the Role to take effect", func() bool {
		_, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		return err == nil
	})

	// The control: the same client connecting straight to kube-apiserver,
	// as the lab's clients did before the front. Its 403s are logged, not
	// asserted: whether it lands in the authorizer's warm-up depends on
	// timing.
	direct := rest.CopyConfig(cfg)
	direct.Host = "https://" + e.front.backend
	dcs, err := kubernetes.NewForConfig(direct)
	if err != nil {
		t.Fatal(err)
	}
	var forbidden, ok, failed, directForbidden atomic.Int64
	var lastForbidden atomic.Value
	stop := make(chan struct{})
	done := make(chan struct{}, 2)
	hammer := func(cs kubernetes.Interface, on func(error)) {
		defer func() { done <- struct{}{} }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			on(err)
			if err != nil {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	go hammer(cs, func(err error) {
		switch {
		case err == nil:
			ok.Add(1)
		case apierrors.IsForbidden(err):
			forbidden.Add(1)
			lastForbidden.Store(err.Error())
		default:
			failed.Add(1)
		}
	})
	go hammer(dcs, func(err error) {
		if apierrors.IsForbidden(err) {
			directForbidden.Add(1)
		}
	})
	refusedBefore := e.FrontRefusals()
	if _, err := e.StopAPIServer(10 * time.Second); err != nil {
		close(stop)
		t.Fatal(err)
	}
	okWhileDown := ok.Load()
	if err := e.StartAPIServer(); err != nil {
		close(stop)
		t.Fatal(err)
	}
	waitFor("a request after the restart", func() bool { return ok.Load() > okWhileDown })
	close(stop)
	<-done
	<-done
	refused := e.FrontRefusals() - refusedBefore
	t.Logf("through the front: %d requests answered, %d failed to connect (client-go retries most), %d refused with 403; the front closed %d connections while /readyz failed; straight to kube-apiserver: %d refused with 403",
		ok.Load(), failed.Load(), forbidden.Load(), refused, directForbidden.Load())
	if forbidden.Load() > 0 {
		t.Errorf("%d requests were refused with 403 across the restart, e.g. %v", forbidden.Load(), lastForbidden.Load())
	}
	if refused == 0 {
		t.Errorf("the front closed no connection during the restart: the test did not ask while kube-apiserver was down")
	}
}
