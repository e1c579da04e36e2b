package nodeclaim

import (
	"context"
	"fmt"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// The lifecycle writer: Persist from a copy read through the cache, as
// Reconcile does, setting the given lifecycle conditions (and Ready) with
// msg, and the providerID.
func persistLifecycle(ctx context.Context, msg string, name string, types ...string) error {
	claim := &nsv1.NodeClaim{}
	if err := h.Client.Get(ctx, client.ObjectKey{Name: name}, claim); err != nil {
		return err
	}
	base := claim.DeepCopy()
	now := metav1.Now()
	for _, t := range types {
		lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.Condition(t, false, "Waiting", msg), claim.Generation, now)
	}
	lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.ClaimReady(claim.Status.Conditions), claim.Generation, now)
	claim.Status.ProviderID = "aws:///zone-a/i-race"
	return Persist(ctx, h.Client, base, claim)
}

// The interruption writer: Disrupting with msg, from a fresh read.
func setDisrupting(ctx context.Context, msg string, name string) error {
	claim := &nsv1.NodeClaim{}
	if err := h.Direct.Get(ctx, client.ObjectKey{Name: name}, claim); err != nil {
		return err
	}
	base := claim.DeepCopy()
	lifecycle.SetCondition(&claim.Status.Conditions, metav1.Condition{Type: nsv1.ConditionDisrupting, Status: metav1.ConditionTrue,
		Reason: "SpotInterruption", Message: msg}, claim.Generation, metav1.Now())
	return statuspatch.Patch(ctx, h.Client, base, claim, statuspatch.ReadFrom(h.Direct))
}

// stillThere checks, on the API server, that each of types has message msg.
func stillThere(ctx context.Context, name, msg string, types ...string) error {
	claim := &nsv1.NodeClaim{}
	if err := h.Direct.Get(ctx, client.ObjectKey{Name: name}, claim); err != nil {
		return err
	}
	for _, t := range types {
		if c := meta.FindStatusCondition(claim.Status.Conditions, t); c == nil || c.Message != msg {
			return fmt.Errorf("%s written with %q is now %+v", t, msg, c)
		}
	}
	return nil
}

// lifecycleStillThere is stillThere for the lifecycle writer, with its providerID.
func lifecycleStillThere(ctx context.Context, name, msg string, types ...string) error {
	if err := stillThere(ctx, name, msg, types...); err != nil {
		return err
	}
	claim := &nsv1.NodeClaim{}
	if err := h.Direct.Get(ctx, client.ObjectKey{Name: name}, claim); err != nil {
		return err
	}
	if claim.Status.ProviderID != "aws:///zone-a/i-race" {
		return fmt.Errorf("providerID lost: %q", claim.Status.ProviderID)
	}
	return nil
}

// The lifecycle controller persists from a copy read before the
// interruption handler set Disrupting: Disrupting must survive.
func TestPersistKeepsAConditionSetSinceTheRead(t *testing.T) {
	ctx := context.Background()
	claim := create(t, controllertest.NodeClaim(uniq("race-seq"), "pool-a"))
	stale := &nsv1.NodeClaim{}
	if err := h.Client.Get(ctx, client.ObjectKeyFromObject(claim), stale); err != nil {
		t.Fatal(err)
	}
	if err := setDisrupting(ctx, "notice 1", claim.Name); err != nil {
		t.Fatal(err)
	}
	base := stale.DeepCopy()
	lifecycle.SetCondition(&stale.Status.Conditions, lifecycle.Condition(nsv1.ConditionLaunched, true, "", ""), stale.Generation, metav1.Now())
	if err := Persist(ctx, h.Client, base, stale); err != nil {
		t.Fatal(err)
	}
	if err := stillThere(ctx, claim.Name, "notice 1", nsv1.ConditionDisrupting); err != nil {
		t.Fatalf("after Persist from a stale copy: %v", err)
	}
	if err := stillThere(ctx, claim.Name, "", nsv1.ConditionLaunched); err != nil {
		t.Fatal(err)
	}
}

// Two writers set different conditions on one claim concurrently, many
// times; after each write the writer checks on the API server that what it
// wrote is there. Nothing may ever be lost.
func TestConcurrentConditionWritersLoseNothing(t *testing.T) {
	const rounds = 40
	ctx := context.Background()
	claim := create(t, controllertest.NodeClaim(uniq("race"), "pool-a"))
	var (
		mu        sync.Mutex
		losses    []string
		conflicts int
	)
	lose := func(format string, a ...any) {
		mu.Lock()
		losses = append(losses, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
	writer := func(write func(msg string) error, check func(msg string) error, who string) {
		for i := 0; i < rounds; i++ {
			msg := fmt.Sprintf("%s %d", who, i)
			err := write(msg)
			if apierrors.IsConflict(err) {
				// Retries ran out (the cache lagged): the reconcile would run
				// again. Not a loss; try the round again.
				mu.Lock()
				conflicts++
				mu.Unlock()
				i--
				continue
			}
			if err != nil {
				lose("%s: %v", who, err)
				return
			}
			if err := check(msg); err != nil {
				lose("%s round %d: %v", who, i, err)
			}
		}
	}
	lifecycleTypes := []string{nsv1.ConditionLaunched, nsv1.ConditionRegistered}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		writer(func(msg string) error { return persistLifecycle(ctx, msg, claim.Name, lifecycleTypes...) },
			func(msg string) error { return lifecycleStillThere(ctx, claim.Name, msg, lifecycleTypes...) }, "lifecycle")
	}()
	go func() {
		defer wg.Done()
		writer(func(msg string) error { return setDisrupting(ctx, msg, claim.Name) },
			func(msg string) error { return stillThere(ctx, claim.Name, msg, nsv1.ConditionDisrupting) }, "interruption")
	}()
	wg.Wait()
	if conflicts > 0 {
		t.Logf("%d writes ran out of conflict retries and were repeated", conflicts)
	}
	if len(losses) > 0 {
		t.Fatalf("%d writes lost, e.g. %s", len(losses), losses[0])
	}
	if err := stillThere(ctx, claim.Name, fmt.Sprintf("lifecycle %d", rounds-1), lifecycleTypes...); err != nil {
		t.Fatal(err)
	}
	if err := stillThere(ctx, claim.Name, fmt.Sprintf("interruption %d", rounds-1), nsv1.ConditionDisrupting); err != nil {
		t.Fatal(err)
	}
}
