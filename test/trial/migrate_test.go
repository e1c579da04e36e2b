package trial

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

// TestMigrateFromKarpenter runs docs/migrate-from-karpenter.md's steps in
// the lab, as its "Rehearse in the lab" section writes them: Karpenter's
// NodePool applied (stand-in CRDs), Nodesmith warns; the manifest
// converted without --node-role keeps Karpenter's role, which the
// Terraform policy cannot pass, and says so; converted with --node-role,
// the cut-over patch silences the warning, the converted objects apply,
// and a Deployment's pods run on Ready nodes of the converted NodePool.
func TestMigrateFromKarpenter(t *testing.T) {
	l, _ := labUp(t)
	ctx := context.Background()

	// The cluster today: Karpenter's NodePool with room.
	l.kubectl(t, "apply", "-f", "examples/karpenter/lab-standin-crds.yaml")
	l.waitFor(t, time.Minute, "Karpenter's stand-in CRDs served", func() error {
		_, err := l.kubectlErr("get", "nodepools.karpenter.sh")
		return err
	})
	l.kubectl(t, "apply", "-f", "examples/karpenter/karpenter.yaml")
	l.waitFor(t, 2*time.Minute, "Nodesmith's KarpenterNodePoolHasRoom event", func() error {
		out := l.kubectl(t, "get", "events", "--field-selector", "reason=KarpenterNodePoolHasRoom", "-o", "custom-columns=MSG:.message", "--no-headers")
		if !strings.Contains(out, "Karpenter NodePool general may still launch nodes") {
			return fmt.Errorf("no warning about nodepools.karpenter.sh/general yet: %q", out)
		}
		return nil
	})
	if log := l.controllerLog(t); !strings.Contains(log, "Karpenter NodePools still have room") {
		t.Errorf("the controller's log has no error line about Karpenter's NodePools")
	}

	// Step 2, without --node-role: the warning names the fix.
	out := l.nodesmith(t, "convert", "-f", "examples/karpenter/karpenter.yaml")
	if !strings.Contains(out, "spec.role KarpenterNodeRole-my-cluster is kept") || !strings.Contains(out, "--node-role NodesmithNodeRole-<cluster>") {
		t.Errorf("convert without --node-role does not warn about the node role:\n%s", out)
	}
	// Applied as is, under the Terraform policy, the class never gets its
	// instance profile: kept out of the cluster under another name.
	kept := strings.ReplaceAll(l.nodesmithStdout(t, "convert", "-f", "examples/karpenter/karpenter.yaml"), "name: default", "name: karpenter-role")
	keptFile := filepath.Join(t.TempDir(), "kept.yaml")
	if err := os.WriteFile(keptFile, []byte(onlyNodeClass(t, kept)), 0o600); err != nil {
		t.Fatal(err)
	}
	l.kubectl(t, "apply", "-f", keptFile)

	// Step 2 as the guide says, step 3, step 4.
	converted := filepath.Join(t.TempDir(), "nodesmith.yaml")
	stdout := l.nodesmithStdout(t, "convert", "-f", "examples/karpenter/karpenter.yaml", "--node-role", "NodesmithNodeRole-my-cluster")
	if err := os.WriteFile(converted, []byte(stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	l.kubectl(t, "patch", "nodepools.karpenter.sh", "general", "--type", "merge", "-p", `{"spec":{"limits":{"cpu":"0"}}}`)
	l.waitFor(t, 2*time.Minute, "the warning gone (nodesmith_karpenter_nodepools_with_room 0)", func() error {
		// The Event stays in history; the log says it once per check.
		before := strings.Count(l.controllerLog(t), "Karpenter NodePools still have room")
		time.Sleep(12 * time.Second) // longer than the lab's --karpenter-check-interval=10s
		if after := strings.Count(l.controllerLog(t), "Karpenter NodePools still have room"); after != before {
			return fmt.Errorf("the controller still logs Karpenter NodePools with room (%d lines, %d before)", after, before)
		}
		return nil
	})
	l.kubectl(t, "apply", "-f", converted)
	ready := l.runWeb(t, 10, "general")
	t.Logf("%d Ready nodes of the converted pool; %s", len(ready), l.kubectl(t, "get", "nodepools.nodesmith.sh,nodeclaims.nodesmith.sh"))

	// The class that kept Karpenter's role is not Ready, and says why: its
	// instance profile cannot take a role the policy does not let the
	// controller pass.
	l.waitFor(t, 2*time.Minute, "the node class that kept Karpenter's role refused", func() error {
		var nc awsv1.EC2NodeClass
		if err := l.kube.Get(ctx, client.ObjectKey{Name: "karpenter-role"}, &nc); err != nil {
			return err
		}
		var ready, profile *metav1.Condition
		for i, c := range nc.Status.Conditions {
			switch c.Type {
			case "Ready":
				ready = &nc.Status.Conditions[i]
			case awsv1.ConditionInstanceProfileReady:
				profile = &nc.Status.Conditions[i]
			}
		}
		if ready != nil && ready.Status == metav1.ConditionTrue {
			t.Fatalf("the node class that kept KarpenterNodeRole-my-cluster is Ready under the Terraform policy: %+v", nc.Status.Conditions)
		}
		if profile == nil || profile.Status != metav1.ConditionFalse {
			return fmt.Errorf("%s not False yet: %+v", awsv1.ConditionInstanceProfileReady, nc.Status.Conditions)
		}
		t.Logf("the node class that kept Karpenter's role: %s False, %s: %s", profile.Type, profile.Reason, profile.Message)
		return nil
	})
	l.nodesmith(t, "lab", "down", "--dir", l.dir)
}

// onlyNodeClass is the EC2NodeClass document of convert's output.
func onlyNodeClass(t *testing.T, yaml string) string {
	t.Helper()
	for _, doc := range strings.Split(yaml, "\n---\n") {
		if strings.Contains(doc, "kind: EC2NodeClass") {
			return doc
		}
	}
	t.Fatalf("no EC2NodeClass in:\n%s", yaml)
	return ""
}
