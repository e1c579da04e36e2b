package termination

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
)

// While AWS does not answer, a deleted claim keeps its finalizer (and its
// Node keeps its own): nothing is let go on the assumption that the
// instance is gone. Once AWS answers, termination finishes.
func TestTerminationWaitsForAnAnswer(t *testing.T) {
	f := newFixture(t, nil)
	f.deleteClaim(t)
	unavailable := cloudprovider.NewCloudUnavailableError(errors.New("RequestLimitExceeded through every retry"))
	steps := []struct {
		name              string
		deleteErr, getErr error
	}{
		{name: "TerminateInstances gets no answer", deleteErr: unavailable},
		{name: "terminated, but the check gets no answer", getErr: unavailable},
	}
	for _, st := range steps {
		f.cloud.Lock()
		f.cloud.DeleteErr, f.cloud.GetErr = st.deleteErr, st.getErr
		f.cloud.Unlock()
		_, err := f.c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: f.claim.Name}})
		if !cloudprovider.IsCloudUnavailable(err) {
			t.Fatalf("%s: Reconcile = %v, want the CloudUnavailable error", st.name, err)
		}
		claim := &nsv1.NodeClaim{}
		if err := h.Direct.Get(context.Background(), client.ObjectKeyFromObject(f.claim), claim); err != nil {
			t.Fatalf("%s: the claim is gone: %v", st.name, err)
		}
		node := &corev1.Node{}
		if err := h.Direct.Get(context.Background(), client.ObjectKeyFromObject(f.node), node); err != nil {
			t.Fatalf("%s: the node is gone: %v", st.name, err)
		}
		if !controllerutil.ContainsFinalizer(claim, nsv1.TerminationFinalizer) || !controllerutil.ContainsFinalizer(node, nsv1.TerminationFinalizer) {
			t.Fatalf("%s: a finalizer came off (claim %v, node %v)", st.name, claim.Finalizers, node.Finalizers)
		}
	}
	f.cloud.Lock()
	f.cloud.DeleteErr, f.cloud.GetErr = nil, nil
	f.cloud.Unlock()
	finish(t, f)
}
