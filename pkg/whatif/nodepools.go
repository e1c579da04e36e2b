package whatif

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/convert"
)

// ReplaceNodePools plans with the pools of a manifest file instead of the
// cluster's: its NodePools replace every NodePool of the snapshot, its
// EC2NodeClasses replace those of the same name and join the rest.
// Karpenter NodePools and EC2NodeClasses are converted first (pkg/convert),
// and the conversion's warnings returned.
func ReplaceNodePools(snap *Snapshot, r io.Reader) ([]convert.Warning, error) {
	res, err := convert.Convert(r)
	if err != nil {
		return nil, fmt.Errorf("reading node pools: %w", err)
	}
	var pools []nsv1.NodePool
	classes := map[string]awsv1.EC2NodeClass{}
	var order []string
	ours := map[string]bool{}
	for _, o := range res.Objects {
		if u, ok := o.(*unstructured.Unstructured); ok {
			typed, err := fromUnstructured(u)
			if err != nil {
				return nil, err
			}
			ours[u.GetKind()+"/"+u.GetName()] = true
			o = typed
		}
		switch x := o.(type) {
		case *nsv1.NodePool:
			pools = append(pools, *x)
		case *awsv1.EC2NodeClass:
			if _, dup := classes[x.Name]; !dup {
				order = append(order, x.Name)
			}
			classes[x.Name] = *x
		}
	}
	if len(pools) == 0 {
		return nil, fmt.Errorf("reading node pools: the file has no NodePool")
	}
	snap.NodePools = pools
	for i, nc := range snap.EC2NodeClasses {
		if repl, ok := classes[nc.Name]; ok {
			snap.EC2NodeClasses[i] = repl
			delete(classes, nc.Name)
		}
	}
	for _, name := range order {
		if nc, ok := classes[name]; ok {
			snap.EC2NodeClasses = append(snap.EC2NodeClasses, nc)
		}
	}
	var warnings []convert.Warning
	for _, w := range res.Warnings {
		if !ours[w.Object] {
			warnings = append(warnings, w)
		}
	}
	return warnings, nil
}

// fromUnstructured reads a Nodesmith NodePool or EC2NodeClass that the
// converter passed through.
func fromUnstructured(u *unstructured.Unstructured) (runtime.Object, error) {
	gvk := u.GroupVersionKind()
	var out runtime.Object
	switch {
	case gvk.GroupVersion() == nsv1.GroupVersion && gvk.Kind == "NodePool":
		out = &nsv1.NodePool{}
	case gvk.GroupVersion() == awsv1.GroupVersion && gvk.Kind == "EC2NodeClass":
		out = &awsv1.EC2NodeClass{}
	default:
		return nil, fmt.Errorf("reading node pools: %s %s/%s is neither a NodePool nor an EC2NodeClass (Nodesmith's or Karpenter's)",
			u.GetAPIVersion(), u.GetKind(), u.GetName())
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("reading %s/%s: %w", gvk.Kind, u.GetName(), err)
	}
	return out, nil
}
