package nodeclass

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/providers/aws"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

// recordingResolver resolves every class and records profile deletions.
type recordingResolver struct {
	mu      sync.Mutex
	deleted []string
	resolve int
}

func (r *recordingResolver) Resolve(_ context.Context, nc *awsv1.EC2NodeClass) (*aws.Resolved, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolve++
	return &aws.Resolved{
		Subnets:         []aws.ResolvedSubnet{{Subnet: awsv1.Subnet{ID: "subnet-1", Zone: "us-east-1a"}}},
		SecurityGroups:  []awsv1.SecurityGroup{{ID: "sg-1"}},
		AMIs:            []awsv1.AMI{{ID: "ami-1", Architecture: "amd64"}},
		InstanceProfile: "profile-" + nc.Name,
	}, nil
}

func (r *recordingResolver) DeleteInstanceProfile(_ context.Context, nc *awsv1.EC2NodeClass) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleted = append(r.deleted, nc.Name)
	return nil
}

func (r *recordingResolver) counts() (resolves int, deleted []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resolve, append([]string(nil), r.deleted...)
}

func nodeClass(name string) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"nodesmith.sh/discovery": "test"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"nodesmith.sh/discovery": "test"}}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       ptr.To("node-role"),
		},
	}
}

// TestFinalizer: a class gets the finalizer on its first reconcile; once
// deleted it waits for the NodeClaims that use it, then deletes the managed
// instance profile exactly once and lets the class go, without resolving
// (which would recreate the profile) on the way out.
func TestFinalizer(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	rec, _ := controllertest.Recorder(clk)
	res := &recordingResolver{}
	c := New(h.Client, res, clk, rec, nil)
	name := fmt.Sprintf("finalizer-%d", time.Now().UnixNano()%1000000)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}

	nc := nodeClass(name)
	if err := h.Direct.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	claim := controllertest.NodeClaim(name+"-claim", "pool-a")
	claim.Spec.NodeClassRef.Name = name
	if err := h.Direct.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, nc)
	h.Cached(t, claim)

	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	got := &awsv1.EC2NodeClass{}
	if err := h.Direct.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if !controllerutil.ContainsFinalizer(got, Finalizer) {
		t.Fatalf("finalizers = %v, want %s", got.Finalizers, Finalizer)
	}
	if got.Status.InstanceProfile != "profile-"+name {
		t.Fatalf("status.instanceProfile = %q, want the resolved profile", got.Status.InstanceProfile)
	}

	if err := h.Direct.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "the cache sees the deletion", func() error {
		cur := &awsv1.EC2NodeClass{}
		if err := h.Client.Get(ctx, req.NamespacedName, cur); err != nil {
			return err
		}
		if cur.DeletionTimestamp.IsZero() {
			return fmt.Errorf("no deletion timestamp yet")
		}
		return nil
	})
	resolvesBefore, _ := res.counts()
	result, err := c.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if result.RequeueAfter != waitForClaims {
		t.Fatalf("with a claim left: RequeueAfter = %v, want %v", result.RequeueAfter, waitForClaims)
	}
	if resolves, deleted := res.counts(); len(deleted) != 0 || resolves != resolvesBefore {
		t.Fatalf("with a claim left: deleted %v, resolves %d→%d; want no deletion and no resolve", deleted, resolvesBefore, resolves)
	}

	if err := h.Direct.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "the cache sees the claim gone", func() error {
		err := h.Client.Get(ctx, types.NamespacedName{Name: claim.Name}, claim)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("claim still cached (err %v)", err)
	})
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, deleted := res.counts(); len(deleted) != 1 || deleted[0] != name {
		t.Fatalf("deleted profiles = %v, want [%s]", deleted, name)
	}
	controllertest.Eventually(t, "the class is gone", func() error {
		err := h.Direct.Get(ctx, req.NamespacedName, &awsv1.EC2NodeClass{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("class still there (err %v)", err)
	})
}
