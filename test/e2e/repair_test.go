package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// repairPool's two nodes run one pod each; its budget allows no voluntary
// disruption, which must not hold a repair (forceful, as in Karpenter).
const (
	repairPool  = "repair"
	repairNodes = 2
)

// nodeRepair: the controller runs with --feature-gates=NodeRepair=true.
// One node of a two-node pool reports KernelReady=False, as the EKS node
// monitoring agent would, since 31 minutes ago (past the 30-minute
// toleration: the lab cannot wait half an hour, so the condition's
// lastTransitionTime says it). That node must be replaced — its pod
// running on a new node, its claim and instance gone — whatever the zero
// budget and the PDB say, and the pool's healthy node left alone.
func nodeRepair(t *testing.T) {
	restartController(t, "--feature-gates=NodeRepair=true")
	defer restoreController(t)
	if err := kube().Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rollNS}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	rollPool(t, repairPool, []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, func(p *nsv1.NodePool) {
		p.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "0"}}
	})
	rollWorkload(t, repairPool, repairNodes)
	originals := waitRollNodes(t, repairPool, repairNodes)
	sick, well := originals[0], originals[1]

	node := &corev1.Node{}
	if err := kube().Get(ctx(), types.NamespacedName{Name: sick.Status.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	since := metav1.NewTime(time.Now().Add(-31 * time.Minute))
	node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: "KernelReady", Status: corev1.ConditionFalse,
		Reason: "KernelDeadlock", Message: "set by the lab, as the EKS node monitoring agent would", LastHeartbeatTime: since, LastTransitionTime: since})
	if err := kube().Status().Update(ctx(), node); err != nil {
		t.Fatal(err)
	}
	marked := time.Now()
	var repairedAt time.Time
	waitFor(t, 3*time.Minute, "the unhealthy node replaced", func() error {
		claims := claimsOf(t, repairPool)
		on := runningOn(rollPods(t, repairPool))
		for _, c := range claims {
			if c.Name == sick.Name {
				return fmt.Errorf("nodeclaim %s still there (deleting %v)", c.Name, !c.DeletionTimestamp.IsZero())
			}
		}
		if len(claims) != repairNodes {
			return fmt.Errorf("%d nodeclaims, want %d", len(claims), repairNodes)
		}
		for _, c := range claims {
			if on[c.Status.NodeName] != 1 {
				return fmt.Errorf("nodeclaim %s runs %d pods", c.Name, on[c.Status.NodeName])
			}
		}
		repairedAt = time.Now()
		return nil
	})
	kept := &nsv1.NodeClaim{}
	if err := kube().Get(ctx(), types.NamespacedName{Name: well.Name}, kept); err != nil || !kept.DeletionTimestamp.IsZero() {
		t.Errorf("the healthy node's claim %s was disrupted (err %v)", well.Name, err)
	}
	checkInstances(t, repairPool, nil)
	t.Logf("KernelReady=False past its toleration: node %s replaced, its pod running on a new node %s after the condition was set",
		sick.Status.NodeName, repairedAt.Sub(marked).Round(time.Second))
	stopRollWorkload(t, repairPool)
	waitFor(t, 2*time.Minute, "the repair pool drained", drained(t, repairPool))
}
