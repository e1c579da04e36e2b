package testenv

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
