package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
)

// bufferKeepsANodeWarm: a CapacityBuffer of 10 chunks keeps room in the
// spot pool with no pod pending (and consolidation, 5 s after, leaves it);
// a burst of 10 pods of the chunk's shape then runs on instances that were
// already up before it came, and the buffer's room is launched again
// behind it.
func bufferKeepsANodeWarm(t *testing.T) {
	c := kube()
	chunk := deployment("warm", "spot", 0, "500m", "128Mi").Spec.Template
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "warm-chunk"}, Template: chunk}
	b := &cbv1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "warm"},
		Spec: cbv1.CapacityBufferSpec{PodTemplateRef: &cbv1.LocalObjectRef{Name: pt.Name}, Replicas: ptr.To[int32](10)}}
	for _, o := range []client.Object{pt, b} {
		if err := c.Create(ctx(), o); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		_ = c.Delete(ctx(), deployment("burst", "spot", 0, "500m", "128Mi"))
		_ = c.Delete(ctx(), b)
		_ = c.Delete(ctx(), pt)
		waitFor(t, 4*time.Minute, "spot pool drained once the buffer is gone", drained(t, spotPool))
	}()
	waitFor(t, time.Minute, "the buffer resolved to 10 chunks", func() error {
		got := &cbv1.CapacityBuffer{}
		if err := c.Get(ctx(), types.NamespacedName{Namespace: ns, Name: b.Name}, got); err != nil {
			return err
		}
		if cond := meta.FindStatusCondition(got.Status.Conditions, cbv1.ConditionReadyForProvisioning); cond == nil || cond.Status != metav1.ConditionTrue ||
			got.Status.Replicas == nil || *got.Status.Replicas != 10 {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	})
	// The room is up, and stays up past consolidateAfter (5 s).
	last, stableSince := -1, time.Now()
	waitFor(t, 3*time.Minute, "the buffer's room launched and settled", func() error {
		n := 0
		for _, cl := range claimsOf(t, spotPool) {
			if cl.Status.NodeName != "" && cl.DeletionTimestamp.IsZero() {
				n++
			}
		}
		if n != last {
			last, stableSince = n, time.Now()
		}
		if n == 0 || time.Since(stableSince) < 20*time.Second {
			return fmt.Errorf("%d registered nodes in the spot pool", n)
		}
		return nil
	})
	before := map[string]bool{}
	for _, in := range liveInstances() {
		before[in.ID] = true
	}
	warmClaims := len(claimsOf(t, spotPool))
	start := time.Now()
	if err := c.Create(ctx(), deployment("burst", "spot", 10, "500m", "128Mi")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the burst running", allRunning(t, "burst", 10))
	took := time.Since(start)
	var pods corev1.PodList
	if err := c.List(ctx(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": "burst"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		node := &corev1.Node{}
		if err := c.Get(ctx(), types.NamespacedName{Name: p.Spec.NodeName}, node); err != nil {
			t.Fatal(err)
		}
		id := node.Spec.ProviderID[strings.LastIndex(node.Spec.ProviderID, "/")+1:]
		if !before[id] {
			t.Errorf("pod %s runs on %s (%s), an instance launched after the burst came", p.Name, p.Spec.NodeName, id)
		}
	}
	t.Logf("a 10-chunk buffer kept %d nodes warm; the burst of 10 ran in %s on them", warmClaims, took.Round(100*time.Millisecond))
	waitFor(t, 2*time.Minute, "the buffer's room launched again behind the burst", func() error {
		if n := len(claimsOf(t, spotPool)); n <= warmClaims {
			return fmt.Errorf("%d claims, %d before the burst", n, warmClaims)
		}
		return nil
	})
}
