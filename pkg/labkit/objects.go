package labkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/test/testenv"
)

// ExampleFleet reads examples/spot-fleet.yaml's EC2NodeClass and NodePool
// with the class's discovery tags pointed at cluster.
func ExampleFleet(cluster string) (*awsv1.EC2NodeClass, *nsv1.NodePool, error) {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "spot-fleet.yaml"))
	if err != nil {
		return nil, nil, err
	}
	var class *awsv1.EC2NodeClass
	var pool *nsv1.NodePool
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		switch {
		case bytes.Contains(doc, []byte("\nkind: NodePool")):
			pool = &nsv1.NodePool{}
			if err := yaml.UnmarshalStrict(doc, pool); err != nil {
				return nil, nil, fmt.Errorf("reading the example NodePool: %w", err)
			}
		case bytes.Contains(doc, []byte("\nkind: EC2NodeClass")):
			class = &awsv1.EC2NodeClass{}
			if err := yaml.UnmarshalStrict(doc, class); err != nil {
				return nil, nil, fmt.Errorf("reading the example EC2NodeClass: %w", err)
			}
		}
	}
	if class == nil || pool == nil {
		return nil, nil, fmt.Errorf("examples/spot-fleet.yaml lacks the EC2NodeClass or the NodePool")
	}
	retag := func(tags map[string]string) {
		if _, ok := tags[awsv1.TagDiscovery]; ok {
			tags[awsv1.TagDiscovery] = cluster
		}
	}
	for _, term := range class.Spec.SubnetSelectorTerms {
		retag(term.Tags)
	}
	for _, term := range class.Spec.SecurityGroupSelectorTerms {
		retag(term.Tags)
	}
	return class, pool, nil
}

// SystemNodes are the lab's nodes that are not Nodesmith's: like the
// managed node group of a real EKS cluster that runs the system pods and
// the controller, tainted (SystemTaint) so workloads stay off them, in the
// region's zones a and b. Their presence matters to kube-scheduler: with no
// node at all it fails pods with an error and backs off for up to 10 s,
// which no real cluster sees.
var SystemNodes = []string{"system-a", "system-b"}

// SystemTaint keeps workloads off the system nodes.
var SystemTaint = corev1.Taint{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoSchedule}

func addSystemNodes(ctx context.Context, kube client.Client, cat *catalog.Catalog, region string) error {
	it, ok := cat.Get("m6i.large")
	if !ok {
		return fmt.Errorf("m6i.large is not in the catalog")
	}
	for _, name := range SystemNodes {
		zone := region + name[len(name)-1:]
		labels := it.LabelsFor(catalog.Offering{Zone: zone, CapacityType: nsv1.CapacityTypeOnDemand})
		labels[corev1.LabelHostname] = name
		labels["node-role"] = "system"
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{KwokAnnotation: "fake"}},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{SystemTaint}},
			Status:     corev1.NodeStatus{Capacity: it.Capacity.DeepCopy(), Allocatable: it.Allocatable()},
		}
		if err := kube.Create(ctx, n); err != nil {
			return fmt.Errorf("creating system node %s: %w", name, err)
		}
	}
	return nil
}

// PodCount counts pods not being deleted, by phase.
type PodCount struct{ Running, Pending, Total int }

// CountPods counts the pods of a namespace matching labels (all of them
// when labels is nil).
func CountPods(ctx context.Context, kube client.Client, namespace string, labels map[string]string) (PodCount, error) {
	var pods corev1.PodList
	opts := []client.ListOption{client.InNamespace(namespace)}
	if labels != nil {
		opts = append(opts, client.MatchingLabels(labels))
	}
	if err := kube.List(ctx, &pods, opts...); err != nil {
		return PodCount{}, err
	}
	var c PodCount
	for _, p := range pods.Items {
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		c.Total++
		switch p.Status.Phase {
		case corev1.PodRunning:
			c.Running++
		case corev1.PodPending:
			c.Pending++
		}
	}
	return c, nil
}

// AllRunning is nil when exactly want pods exist and all of them run.
func (c PodCount) AllRunning(want int) error {
	if c.Running != want || c.Total != want {
		return fmt.Errorf("%d of %d pods running (%d pending), want %d", c.Running, c.Total, c.Pending, want)
	}
	return nil
}
