package nodeclaim

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// work is how long the lifecycle writer takes between its read and its
// write, as Reconcile's phases do.
const work = 3 * time.Millisecond

// The lifecycle writer: Persist from a copy read through the cache, as
// Reconcile does, setting the given lifecycle conditions (and Ready) with
// msg, and the providerID.
func persistLifecycle(ctx context.Context, msg string, name string, types ...string) error {
	claim := &nsv1.NodeClaim{}
	if err := h.Client.Get(ctx, client.ObjectKey{Name: name}, claim); err != nil {
		return err
	}
	base := claim.DeepCopy()
	time.Sleep(work) // the phases' work between Reconcile's read and its Persist
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
// times, each message numbered. Every version of the claim the watch
// delivers is checked: a condition, once written, may only move on to a
// later number of its own writer, never back to an older one or away —
// either would be a write another writer erased. After each write the
// writer also checks on the API server that what it wrote is there.
func TestConcurrentConditionWritersLoseNothing(t *testing.T) {
	const rounds = 40
	ctx := context.Background()
	claim := controllertest.NodeClaim(uniq("race"), "pool-a")
	lifecycleTypes := []string{nsv1.ConditionLaunched, nsv1.ConditionRegistered}
	watched := append([]string{nsv1.ConditionDisrupting}, lifecycleTypes...)
	var (
		mu        sync.Mutex
		losses    []string
		conflicts int
		versions  int
		last      = map[string]int{} // highest number seen per condition type
	)
	lose := func(format string, a ...any) {
		mu.Lock()
		losses = append(losses, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
	inf, err := h.Mgr.GetCache().GetInformer(ctx, &nsv1.NodeClaim{})
	if err != nil {
		t.Fatal(err)
	}
	observe := func(o any) {
		c, ok := o.(*nsv1.NodeClaim)
		if !ok || c.Name != claim.Name {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		versions++
		for _, typ := range watched {
			n := -1
			if cond := meta.FindStatusCondition(c.Status.Conditions, typ); cond != nil {
				if _, err := fmt.Sscanf(cond.Message[strings.LastIndex(cond.Message, " ")+1:], "%d", &n); err != nil {
					n = -1
				}
			}
			if prev, seen := last[typ]; seen && n < prev {
				losses = append(losses, fmt.Sprintf("resourceVersion %s: %s went from %d back to %d", c.ResourceVersion, typ, prev, n))
				continue
			}
			if n >= 0 {
				last[typ] = n
			}
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { observe(o) },
		UpdateFunc: func(_, o any) { observe(o) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	create(t, claim)

	// round is one writer's write of message "who i" and its check; a write
	// whose conflict retries ran out (the cache lagged) is repeated, as
	// its reconcile would be.
	round := func(i int, who string, write, check func(msg string) error) {
		msg := fmt.Sprintf("%s %d", who, i)
		for {
			err := write(msg)
			if apierrors.IsConflict(err) {
				mu.Lock()
				conflicts++
				mu.Unlock()
				continue
			}
			if err != nil {
				lose("%s: %v", who, err)
				return
			}
			break
		}
		if err := check(msg); err != nil {
			lose("%s round %d: %v", who, i, err)
		}
	}
	// Both writers start each round together, so their reads and writes
	// interleave in every round.
	for i := 0; i < rounds; i++ {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			round(i, "lifecycle",
				func(msg string) error { return persistLifecycle(ctx, msg, claim.Name, lifecycleTypes...) },
				func(msg string) error { return lifecycleStillThere(ctx, claim.Name, msg, lifecycleTypes...) })
		}()
		go func() {
			defer wg.Done()
			round(i, "interruption",
				func(msg string) error { return setDisrupting(ctx, msg, claim.Name) },
				func(msg string) error { return stillThere(ctx, claim.Name, msg, nsv1.ConditionDisrupting) })
		}()
		wg.Wait()
	}
	// Every version up to the last reaches the handler.
	controllertest.Eventually(t, "the watch delivering the last writes", func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, typ := range watched {
			if last[typ] != rounds-1 {
				return fmt.Errorf("%s last seen at %d, want %d", typ, last[typ], rounds-1)
			}
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d versions observed, %d writes ran out of conflict retries and were repeated", versions, conflicts)
	if len(losses) > 0 {
		t.Fatalf("%d lost writes, first: %s", len(losses), losses[0])
	}
	if versions < rounds {
		t.Fatalf("only %d versions observed: the watch check saw too little to mean anything", versions)
	}
}
