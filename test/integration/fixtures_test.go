package integration

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	v1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Minimal valid objects; each validation case breaks exactly one thing.

func validNodePool(name string) *v1.NodePool {
	return &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{
				Spec: v1.NodeClaimTemplateSpec{
					NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
					Requirements: []v1.NodeSelectorRequirementWithMinValues{
						{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"amd64", "arm64"}},
					},
				},
			},
		},
	}
}

func validNodeClass(name string) *awsv1.EC2NodeClass {
	role := "NodesmithNodeRole"
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       &role,
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{awsv1.TagDiscovery: "test"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{awsv1.TagDiscovery: "test"}}},
		},
	}
}

func validNodeClaim(name string) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "default"}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: "node.kubernetes.io/instance-type", Operator: "In", Values: []string{"m5.large", "m6g.large"}},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// unstructuredWith turns a typed object into its JSON form and sets one
// field to a value the Go type could not hold (e.g. "3d" for a Duration).
func unstructuredWith(t *testing.T, obj client.Object, value any, path ...string) client.Object {
	t.Helper()
	gvks, _, err := env.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetGroupVersionKind(gvks[0])
	if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
		t.Fatal(err)
	}
	return u
}
