package integration

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	v1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/convert"
	"github.com/nodesmith/nodesmith/test/testenv"
)

// TestConvertedManifestsAreAccepted converts the Karpenter manifests of
// pkg/convert/testdata (v1beta1 and v1) and creates every object on the API
// server with our CRDs and their CEL rules, then reads each back: the
// output of `nodesmith convert` is what `kubectl apply` takes.
func TestConvertedManifestsAreAccepted(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(testenv.RepoRoot(), "pkg", "convert", "testdata")
	for _, file := range []string{"karpenter-v1beta1.yaml", "karpenter-v1beta1-kubelet.yaml", "karpenter-v1.yaml"} {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := convert.Convert(f)
			if err != nil {
				t.Fatal(err)
			}
			// A suffix keeps these names apart from other tests' objects.
			suffix := "-convert-" + file[len("karpenter-"):len(file)-len(".yaml")]
			var created []client.Object
			for _, o := range res.Objects {
				var obj client.Object
				switch x := o.(type) {
				case *v1.NodePool:
					x = x.DeepCopy()
					x.Name += suffix
					x.Spec.Template.Spec.NodeClassRef.Name += suffix
					obj = x
				case *awsv1.EC2NodeClass:
					x = x.DeepCopy()
					x.Name += suffix
					obj = x
				default:
					t.Fatalf("unexpected %T in the output", o)
				}
				sent := obj.DeepCopyObject().(client.Object)
				if err := env.Client.Create(ctx, obj); err != nil {
					t.Fatalf("the API server refused converted %s: %v", obj.GetName(), err)
				}
				created = append(created, obj)
				got := sent.DeepCopyObject().(client.Object)
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sent), got); err != nil {
					t.Fatal(err)
				}
				if !sameSpec(sent, got) {
					t.Errorf("%s: stored spec differs from the converted one:\nsent %+v\ngot  %+v", obj.GetName(), sent, got)
				}
			}
			if len(created) == 0 {
				t.Fatal("nothing converted")
			}
			for _, o := range created {
				if err := env.Client.Delete(ctx, o); err != nil {
					t.Errorf("cleaning up %s: %v", o.GetName(), err)
				}
			}
		})
	}
}

// sameSpec compares what the converter set with what the server stored,
// where the server only adds defaults for fields the converter left unset.
func sameSpec(sent, got client.Object) bool {
	switch s := sent.(type) {
	case *v1.NodePool:
		g := got.(*v1.NodePool)
		st, gt := s.Spec.Template.Spec, g.Spec.Template.Spec
		return equality.Semantic.DeepEqual(st.Requirements, gt.Requirements) &&
			equality.Semantic.DeepEqual(st.NodeClassRef, gt.NodeClassRef) &&
			equality.Semantic.DeepEqual(st.Taints, gt.Taints) &&
			equality.Semantic.DeepEqual(s.Spec.Limits, g.Spec.Limits) &&
			(s.Spec.Disruption.ConsolidationPolicy == "" || s.Spec.Disruption.ConsolidationPolicy == g.Spec.Disruption.ConsolidationPolicy) &&
			(st.ExpireAfter.IsZero() || equality.Semantic.DeepEqual(st.ExpireAfter.Duration, gt.ExpireAfter.Duration))
	case *awsv1.EC2NodeClass:
		g := got.(*awsv1.EC2NodeClass)
		return equality.Semantic.DeepEqual(s.Spec.AMISelectorTerms, g.Spec.AMISelectorTerms) &&
			equality.Semantic.DeepEqual(s.Spec.SubnetSelectorTerms, g.Spec.SubnetSelectorTerms) &&
			equality.Semantic.DeepEqual(s.Spec.Kubelet, g.Spec.Kubelet) &&
			equality.Semantic.DeepEqual(s.Spec.Role, g.Spec.Role) &&
			(s.Spec.MetadataOptions == nil || equality.Semantic.DeepEqual(s.Spec.MetadataOptions.HTTPPutResponseHopLimit, g.Spec.MetadataOptions.HTTPPutResponseHopLimit))
	}
	return false
}
