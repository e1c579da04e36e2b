package integration

import (
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/kubesnapshot"
	"github.com/nodesmith/nodesmith/pkg/whatif"
)

// TestSnapshotReadsTheCluster takes a snapshot of the API server through
// the same lister `nodesmith snapshot` uses and checks every kind is in it,
// without managed fields, and that plan and explain read it.
func TestSnapshotReadsTheCluster(t *testing.T) {
	ctx := t.Context()
	np, nc, claim := validNodePool("snap"), validNodeClass("snap"), validNodeClaim("snap-claim")
	np.Spec.Template.Spec.NodeClassRef.Name = "snap"
	claim.Labels[`nodesmith.sh/nodepool`] = "snap"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "snap-node", Labels: map[string]string{corev1.LabelInstanceTypeStable: "m6g.large"}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "snap-pod"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}}}}
	labels := map[string]string{"app": "snap-ds"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "snap-ds"}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "snap-pdb"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "snap-sc"}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &wffc}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "snap-pv"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-1"}}}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "snap-pvc"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &sc.Name,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	objs := []client.Object{np, nc, claim, node, pod, ds, pdb, sc, pv, pvc}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	t.Cleanup(func() {
		for _, o := range objs {
			_ = env.Client.Delete(ctx, o)
		}
	})

	// Through a kubeconfig, as the CLI connects.
	kube, name, err := kubesnapshot.Connect(writeKubeconfig(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if name != "envtest" {
		t.Errorf("context = %q, want the kubeconfig's current context", name)
	}
	snap, warnings, err := kubesnapshot.Take(ctx, kube, name, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %v, want none: the CRDs are installed", warnings)
	}
	found := map[string]bool{}
	check := func(kind string, m metav1.ObjectMeta, want string) {
		if m.Name == want {
			found[kind] = true
			if len(m.ManagedFields) > 0 {
				t.Errorf("%s %s keeps its managed fields", kind, m.Name)
			}
		}
	}
	for _, o := range snap.NodePools {
		check("NodePool", o.ObjectMeta, "snap")
	}
	for _, o := range snap.EC2NodeClasses {
		check("EC2NodeClass", o.ObjectMeta, "snap")
	}
	for _, o := range snap.NodeClaims {
		check("NodeClaim", o.ObjectMeta, "snap-claim")
	}
	for _, o := range snap.Nodes {
		check("Node", o.ObjectMeta, "snap-node")
	}
	for _, o := range snap.Pods {
		check("Pod", o.ObjectMeta, "snap-pod")
	}
	for _, o := range snap.DaemonSets {
		check("DaemonSet", o.ObjectMeta, "snap-ds")
	}
	for _, o := range snap.PodDisruptionBudgets {
		check("PodDisruptionBudget", o.ObjectMeta, "snap-pdb")
	}
	for _, o := range snap.StorageClasses {
		check("StorageClass", o.ObjectMeta, "snap-sc")
	}
	for _, o := range snap.PersistentVolumes {
		check("PersistentVolume", o.ObjectMeta, "snap-pv")
	}
	for _, o := range snap.PersistentVolumeClaims {
		check("PersistentVolumeClaim", o.ObjectMeta, "snap-pvc")
	}
	if len(found) != len(objs) {
		t.Errorf("snapshot holds %v, want all %d kinds", found, len(objs))
	}
	if snap.APIVersion != whatif.SnapshotAPIVersion || snap.Kind != whatif.SnapshotKind || snap.Source != "envtest" {
		t.Errorf("header = %s %s %s", snap.APIVersion, snap.Kind, snap.Source)
	}
	// The pod is not marked Unschedulable (no scheduler runs here), so
	// explain says so and explains it anyway.
	r, err := whatif.ExplainPod(snap, "default", "snap-pod", whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Provisionable || r.NotProvisionable == "" || len(r.Pools) == 0 {
		t.Errorf("explain = %+v", r)
	}
}

// writeKubeconfig writes a kubeconfig for the test API server whose current
// context is envtest.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := env.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
