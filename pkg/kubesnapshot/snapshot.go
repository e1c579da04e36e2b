package kubesnapshot

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	nsv1alpha1 "github.com/nodesmith/nodesmith/apis/v1alpha1"
	"github.com/nodesmith/nodesmith/pkg/whatif"
)

// Scheme knows the built-in kinds, both Nodesmith API groups and
// CapacityBuffer's.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, nsv1.AddToScheme, awsv1.AddToScheme, cbv1.AddToScheme, nsv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	return s, nil
}

// Connect builds a client from a kubeconfig (empty: $KUBECONFIG or
// ~/.kube/config, as kubectl) and context (empty: its current context), and
// returns the context's name.
func Connect(kubeconfig, kubeContext string) (client.Reader, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("reading the kubeconfig: %w", err)
	}
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, "", fmt.Errorf("reading the kubeconfig: %w", err)
	}
	name := kubeContext
	if name == "" {
		name = raw.CurrentContext
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", fmt.Errorf("connecting to context %s: %w", name, err)
	}
	return c, name, nil
}

// Take lists the cluster into a snapshot taken at now. Kinds the cluster
// does not serve (Nodesmith's CRDs not installed) are left empty and named
// in the returned warnings.
func Take(ctx context.Context, c client.Reader, source string, now time.Time) (*whatif.Snapshot, []string, error) {
	s := &whatif.Snapshot{APIVersion: whatif.SnapshotAPIVersion, Kind: whatif.SnapshotKind,
		TakenAt: metav1.NewTime(now.UTC().Truncate(time.Second)), Source: source}
	var (
		pods        corev1.PodList
		nodes       corev1.NodeList
		claims      nsv1.NodeClaimList
		pools       nsv1.NodePoolList
		ncs         awsv1.EC2NodeClassList
		dss         appsv1.DaemonSetList
		pdbs        policyv1.PodDisruptionBudgetList
		pvcs        corev1.PersistentVolumeClaimList
		pvs         corev1.PersistentVolumeList
		scs         storagev1.StorageClassList
		pts         corev1.PodTemplateList
		cbs         cbv1.CapacityBufferList
		overlays    nsv1alpha1.NodeOverlayList
		commitments nsv1alpha1.CommitmentList
	)
	var warnings []string
	for _, l := range []struct {
		list     client.ObjectList
		name     string
		optional bool
	}{
		{&pods, "pods", false}, {&nodes, "nodes", false}, {&claims, "nodeclaims", true}, {&pools, "nodepools", true},
		{&ncs, "ec2nodeclasses", true}, {&dss, "daemonsets", false}, {&pdbs, "poddisruptionbudgets", false},
		{&pvcs, "persistentvolumeclaims", false}, {&pvs, "persistentvolumes", false}, {&scs, "storageclasses", false},
		{&cbs, "capacitybuffers", true}, {&overlays, "nodeoverlays", true}, {&commitments, "commitments", true},
	} {
		err := c.List(ctx, l.list)
		if err != nil && l.optional && meta.IsNoMatchError(err) {
			warnings = append(warnings, fmt.Sprintf("the cluster does not serve %s (Nodesmith's CRDs are not installed); none in the snapshot", l.name))
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("listing %s: %w", l.name, err)
		}
	}
	s.Pods, s.Nodes, s.NodeClaims, s.NodePools = pods.Items, nodes.Items, claims.Items, pools.Items
	s.EC2NodeClasses, s.DaemonSets, s.PodDisruptionBudgets = ncs.Items, dss.Items, pdbs.Items
	s.PersistentVolumeClaims, s.PersistentVolumes, s.StorageClasses = pvcs.Items, pvs.Items, scs.Items
	// PodTemplates only for the buffers that name them: a snapshot of a
	// cluster without buffers needs no right to read them.
	if len(cbs.Items) > 0 {
		if err := c.List(ctx, &pts); err != nil {
			return nil, nil, fmt.Errorf("listing podtemplates (capacity buffers name them): %w", err)
		}
	}
	s.PodTemplates, s.CapacityBuffers = pts.Items, cbs.Items
	s.NodeOverlays, s.Commitments = overlays.Items, commitments.Items
	for i := range s.Pods {
		trim(&s.Pods[i].ObjectMeta)
	}
	for i := range s.Nodes {
		trim(&s.Nodes[i].ObjectMeta)
		s.Nodes[i].Status.Images = nil // the largest part of a Node, read by no decision
	}
	for i := range s.NodeClaims {
		trim(&s.NodeClaims[i].ObjectMeta)
	}
	for i := range s.NodePools {
		trim(&s.NodePools[i].ObjectMeta)
	}
	for i := range s.EC2NodeClasses {
		trim(&s.EC2NodeClasses[i].ObjectMeta)
	}
	for i := range s.DaemonSets {
		trim(&s.DaemonSets[i].ObjectMeta)
	}
	for i := range s.PodDisruptionBudgets {
		trim(&s.PodDisruptionBudgets[i].ObjectMeta)
	}
	for i := range s.PersistentVolumeClaims {
		trim(&s.PersistentVolumeClaims[i].ObjectMeta)
	}
	for i := range s.PersistentVolumes {
		trim(&s.PersistentVolumes[i].ObjectMeta)
	}
	for i := range s.StorageClasses {
		trim(&s.StorageClasses[i].ObjectMeta)
	}
	for i := range s.PodTemplates {
		trim(&s.PodTemplates[i].ObjectMeta)
	}
	for i := range s.CapacityBuffers {
		trim(&s.CapacityBuffers[i].ObjectMeta)
	}
	return s, warnings, nil
}

// trim drops what no decision reads and makes a snapshot large.
func trim(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	delete(m.Annotations, corev1.LastAppliedConfigAnnotation)
}
