package operator

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestOnlyConflicts(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "nodesmith.sh", Resource: "nodeclaims"}, "a", errors.New("the object has been modified"))
	other := errors.New("connection refused")
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a conflict", conflict, true},
		{"a wrapped conflict", fmt.Errorf("removing finalizer: %w", conflict), true},
		{"another error", other, false},
		{"not found", apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "n"), false},
		{"joined conflicts", errors.Join(conflict, fmt.Errorf("patching status: %w", conflict)), true},
		{"a conflict joined with another error", errors.Join(conflict, other), false},
	} {
		if got := OnlyConflicts(tt.err); got != tt.want {
			t.Errorf("%s: OnlyConflicts = %v, want %v", tt.name, got, tt.want)
		}
	}
}

type reconcileFunc func() (reconcile.Result, error)

func (f reconcileFunc) Reconcile(context.Context, reconcile.Request) (reconcile.Result, error) {
	return f()
}

// A reconcile that failed only on a conflict comes back soon with no error
// (controller-runtime would log one); any other error is passed on.
func TestQuietConflicts(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n", errors.New("modified"))
	res, err := quietConflicts{reconcileFunc(func() (reconcile.Result, error) { return reconcile.Result{}, conflict })}.Reconcile(context.Background(), reconcile.Request{})
	if err != nil || res.RequeueAfter != ConflictRetry {
		t.Fatalf("conflict: %+v, %v; want RequeueAfter %s and no error", res, err, ConflictRetry)
	}
	other := errors.New("boom")
	if _, err := (quietConflicts{reconcileFunc(func() (reconcile.Result, error) { return reconcile.Result{}, other })}).Reconcile(context.Background(), reconcile.Request{}); !errors.Is(err, other) {
		t.Fatalf("other error: %v; want it passed on", err)
	}
	stopped, stop := context.WithCancel(context.Background())
	stop()
	canceled := fmt.Errorf("patching nodepool status: %w", context.Canceled)
	if _, err := (quietConflicts{reconcileFunc(func() (reconcile.Result, error) { return reconcile.Result{}, canceled })}).Reconcile(stopped, reconcile.Request{}); err != nil {
		t.Fatalf("cut short by the stop: %v; want no error", err)
	}
	if _, err := (quietConflicts{reconcileFunc(func() (reconcile.Result, error) { return reconcile.Result{}, canceled })}).Reconcile(context.Background(), reconcile.Request{}); err == nil {
		t.Fatal("a canceled call while running was swallowed")
	}
}
