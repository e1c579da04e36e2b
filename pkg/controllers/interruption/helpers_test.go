package interruption

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func reqFor(o client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)}
}

// failingReader fails every read, as an API server that is down would.
type failingReader struct{}

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("the API server is unavailable")
}

func (failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("the API server is unavailable")
}

var errNotYet = errors.New("not yet")

func conditionTrue(t string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, LastTransitionTime: metav1.NewTime(at)}
}

// SharedHarness hands the test API server to the package's external tests
// (e2e_test.go, which imports pkg/controllers and so cannot be internal).
func SharedHarness() *controllertest.Harness { return h }
