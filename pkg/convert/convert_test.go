package convert

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func convertFile(t *testing.T, name string) *Result {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := Convert(f)
	if err != nil {
		t.Fatalf("converting %s: %v", name, err)
	}
	return res
}

func pools(res *Result) map[string]*nsv1.NodePool {
	out := map[string]*nsv1.NodePool{}
	for _, o := range res.Objects {
		if np, ok := o.(*nsv1.NodePool); ok {
			out[np.Name] = np
		}
	}
	return out
}

func classes(res *Result) map[string]*awsv1.EC2NodeClass {
	out := map[string]*awsv1.EC2NodeClass{}
	for _, o := range res.Objects {
		if nc, ok := o.(*awsv1.EC2NodeClass); ok {
			out[nc.Name] = nc
		}
	}
	return out
}

func requirement(np *nsv1.NodePool, key string) *nsv1.NodeSelectorRequirementWithMinValues {
	for i, r := range np.Spec.Template.Spec.Requirements {
		if r.Key == key {
			return &np.Spec.Template.Spec.Requirements[i]
		}
	}
	return nil
}

// warnings lists the warnings as "Kind/name: field" (the message left out),
// sorted, so a test names which fields were reported.
func warnings(res *Result) []string {
	var out []string
	for _, w := range res.Warnings {
		out = append(out, w.Object+": "+w.Field)
	}
	sort.Strings(out)
	return out
}

func TestConvertV1beta1(t *testing.T) {
	res := convertFile(t, "karpenter-v1beta1.yaml")
	if len(res.Objects) != 2 {
		t.Fatalf("objects = %d, want a NodePool and an EC2NodeClass", len(res.Objects))
	}
	np, nc := pools(res)["default"], classes(res)["default"]
	if np == nil || nc == nil {
		t.Fatalf("pools %v, classes %v", pools(res), classes(res))
	}
	family := requirement(np, awsv1.LabelInstanceFamily)
	ct := requirement(np, nsv1.LabelCapacityType)
	cpu, mem := np.Spec.Limits[corev1.ResourceCPU], np.Spec.Limits[corev1.ResourceMemory]
	exp := np.Spec.Template.Spec.ExpireAfter
	ref := np.Spec.Template.Spec.NodeClassRef
	tests := []struct {
		name string
		ok   bool
	}{
		{"instance-family renamed, values kept", family != nil && family.Operator == corev1.NodeSelectorOpIn &&
			strings.Join(family.Values, ",") == "c5,c6g,m5,m6g,r5,r6g"},
		{"capacity-type renamed, spot kept", ct != nil && strings.Join(ct.Values, ",") == "spot"},
		{"other keys unchanged", requirement(np, corev1.LabelOSStable) != nil},
		{"no karpenter key left", !strings.Contains(dump(t, res), "karpenter.sh/capacity-type") && !strings.Contains(dump(t, res), "karpenter.k8s.aws/instance")},
		{"limits cpu 1000", cpu.Cmp(resource.MustParse("1000")) == 0},
		{"limits memory 1000Gi", mem.Cmp(resource.MustParse("1000Gi")) == 0},
		{"WhenUnderutilized becomes WhenEmptyOrUnderutilized", np.Spec.Disruption.ConsolidationPolicy == nsv1.ConsolidationPolicyWhenEmptyOrUnderutilized},
		{"expireAfter moves from disruption into the template", exp.Duration != nil && *exp.Duration == 720*time.Hour},
		{"nodeClassRef gets our group", ref != nil && *ref == nsv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}},
		{"template labels kept", np.Spec.Template.ObjectMeta.Labels["team"] == "platform"},
		{"kubectl and karpenter hash annotations left out", len(np.Annotations) == 0},
		{"role kept", nc.Spec.Role != nil && *nc.Spec.Role == "KarpenterNodeRole-my-cluster" && nc.Spec.InstanceProfile == nil},
		{"subnet selector keeps the discovery tag as written", len(nc.Spec.SubnetSelectorTerms) == 1 &&
			nc.Spec.SubnetSelectorTerms[0].Tags["karpenter.sh/discovery"] == "my-cluster"},
		{"security group selector keeps the discovery tag", len(nc.Spec.SecurityGroupSelectorTerms) == 1 &&
			nc.Spec.SecurityGroupSelectorTerms[0].Tags["karpenter.sh/discovery"] == "my-cluster"},
		{"amiFamily AL2023 without terms becomes the alias", len(nc.Spec.AMISelectorTerms) == 1 &&
			nc.Spec.AMISelectorTerms[0].Alias == "al2023@latest" && nc.Spec.AMIFamily == nil},
		{"v1beta1's hop limit 2 kept", nc.Spec.MetadataOptions != nil && *nc.Spec.MetadataOptions.HTTPPutResponseHopLimit == 2},
		{"tags kept", nc.Spec.Tags["team"] == "platform"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Errorf("converted:\n%s", dump(t, res))
			}
		})
	}
	// expireAfter becomes forceful: the user is told.
	if got, want := warnings(res), []string{"EC2NodeClass/default: spec.metadataOptions", "EC2NodeClass/default: spec.role", "NodePool/default: spec.disruption.expireAfter"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("warnings = %q, want %q", got, want)
	}
}

func TestConvertV1(t *testing.T) {
	res := convertFile(t, "karpenter-v1.yaml")
	np, ncs := pools(res)["general"], classes(res)
	al, br := ncs["al2023"], ncs["bottlerocket"]
	if np == nil || al == nil || br == nil {
		t.Fatalf("converted:\n%s", dump(t, res))
	}
	ts := np.Spec.Template.Spec
	cat := requirement(np, awsv1.LabelInstanceCategory)
	gen := requirement(np, awsv1.LabelInstanceGeneration)
	budgets := np.Spec.Disruption.Budgets
	nodes := np.Spec.Limits[nsv1.ResourceNodes]
	tests := []struct {
		name string
		ok   bool
	}{
		{"minValues kept", cat != nil && cat.MinValues != nil && *cat.MinValues == 2},
		{"Gt kept", gen != nil && gen.Operator == corev1.NodeSelectorOpGt && gen.Values[0] == "5"},
		{"zone requirement kept, zone-id dropped", requirement(np, corev1.LabelTopologyZone) != nil && len(ts.Requirements) == 4},
		{"expireAfter and terminationGracePeriod", ts.ExpireAfter.Duration != nil && *ts.ExpireAfter.Duration == 336*time.Hour &&
			ts.TerminationGracePeriod != nil && ts.TerminationGracePeriod.Duration == 48*time.Hour},
		{"taints and startup taints", len(ts.Taints) == 1 && ts.Taints[0].Key == "example.com/dedicated" && len(ts.StartupTaints) == 1},
		{"budgets with schedule, duration and reasons", len(budgets) == 2 && budgets[1].Nodes == "0" && *budgets[1].Schedule == "0 9 * * mon-fri" &&
			budgets[1].Duration.Duration == 8*time.Hour && len(budgets[1].Reasons) == 2},
		{"consolidateAfter", np.Spec.Disruption.ConsolidateAfter.Duration != nil && *np.Spec.Disruption.ConsolidateAfter.Duration == time.Minute},
		{"limits with nodes", nodes.Value() == 50},
		{"weight", np.Spec.Weight != nil && *np.Spec.Weight == 10},
		{"object labels kept", np.Labels["app.kubernetes.io/managed-by"] == "platform"},
		{"versioned alias kept", al.Spec.AMISelectorTerms[0].Alias == "al2023@v20240807"},
		{"kubelet kept where it is", al.Spec.Kubelet != nil && *al.Spec.Kubelet.MaxPods == 58 && al.Spec.Kubelet.KubeReserved["cpu"] == "200m" &&
			al.Spec.Kubelet.EvictionHard["memory.available"] == "500Mi"},
		{"block devices", len(al.Spec.BlockDeviceMappings) == 1 && al.Spec.BlockDeviceMappings[0].RootVolume &&
			al.Spec.BlockDeviceMappings[0].EBS.VolumeSize.String() == "100Gi" && *al.Spec.BlockDeviceMappings[0].EBS.IOPS == 3000},
		{"metadata options as written (no v1beta1 default)", *al.Spec.MetadataOptions.HTTPPutResponseHopLimit == 1},
		{"monitoring and public IP", *al.Spec.DetailedMonitoring && !*al.Spec.AssociatePublicIPAddress},
		{"subnet by id", len(al.Spec.SubnetSelectorTerms) == 2 && al.Spec.SubnetSelectorTerms[1].ID == "subnet-0123456789abcdef0"},
		{"bottlerocket alias, amiFamily follows it", br.Spec.AMISelectorTerms[0].Alias == "bottlerocket@latest" && br.Spec.AMIFamily == nil},
		{"user data kept", br.Spec.UserData != nil && strings.Contains(*br.Spec.UserData, "kube-api-qps")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Errorf("converted:\n%s", dump(t, res))
			}
		})
	}
	want := []string{
		"EC2NodeClass/al2023: spec.kubelet.evictionSoft",
		"EC2NodeClass/al2023: spec.kubelet.evictionSoftGracePeriod",
		"EC2NodeClass/al2023: spec.role",
		"EC2NodeClass/bottlerocket: spec.role",
		"NodePool/general: spec.template.spec.requirements[4]",
	}
	if got := warnings(res); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("warnings = %q, want %q", got, want)
	}
}

func TestConvertMovesKubeletIntoNodeClasses(t *testing.T) {
	res := convertFile(t, "karpenter-v1beta1-kubelet.yaml")
	ps, ncs := pools(res), classes(res)
	shared, copied := ncs["shared"], ncs["shared-web"]
	if shared == nil || copied == nil || len(ncs) != 2 {
		t.Fatalf("classes = %v, want shared and its copy shared-web", ncs)
	}
	batch := ps["batch"]
	ct := requirement(batch, nsv1.LabelCapacityType)
	tests := []struct {
		name string
		ok   bool
	}{
		{"the first pool's settings go into the class", shared.Spec.Kubelet != nil && *shared.Spec.Kubelet.MaxPods == 110 &&
			shared.Spec.Kubelet.SystemReserved["cpu"] == "100m" && shared.Spec.Kubelet.EvictionHard["memory.available"] == "5%"},
		{"batch keeps the class", batch.Spec.Template.Spec.NodeClassRef.Name == "shared"},
		{"a pool with other settings gets a copy of the class", *copied.Spec.Kubelet.MaxPods == 58 &&
			ps["web"].Spec.Template.Spec.NodeClassRef.Name == "shared-web" && copied.Spec.InstanceProfile != nil},
		{"the copy follows its original in the output", indexOf(res, shared) == indexOf(res, copied)-1},
		{"a class not in the input is left as named", ps["elsewhere"].Spec.Template.Spec.NodeClassRef.Name == "not-in-this-file"},
		{"nodeClassRef without apiVersion or kind gets our group and kind", batch.Spec.Template.Spec.NodeClassRef.Group == awsv1.Group &&
			batch.Spec.Template.Spec.NodeClassRef.Kind == "EC2NodeClass"},
		{"reserved dropped, minValues lowered to what is left", ct != nil && strings.Join(ct.Values, ",") == "spot,on-demand" && *ct.MinValues == 2},
		{"a requirement on a label nobody sets is dropped", len(batch.Spec.Template.Spec.Requirements) == 2},
		{"do-not-disrupt annotation renamed", batch.Spec.Template.ObjectMeta.Annotations[nsv1.AnnotationDoNotDisrupt] == "true"},
		{"expireAfter Never", batch.Spec.Template.Spec.ExpireAfter.Raw != nil && batch.Spec.Template.Spec.ExpireAfter.IsNever()},
		{"WhenEmpty stays", batch.Spec.Disruption.ConsolidationPolicy == nsv1.ConsolidationPolicyWhenEmpty},
		{"Bottlerocket family becomes its alias", shared.Spec.AMISelectorTerms[0].Alias == "bottlerocket@latest"},
		{"partial metadata options get v1beta1's hop limit", *shared.Spec.MetadataOptions.HTTPPutResponseHopLimit == 2 &&
			*shared.Spec.MetadataOptions.HTTPTokens == "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Errorf("converted:\n%s", dump(t, res))
			}
		})
	}
	want := []string{
		"EC2NodeClass/shared: spec.instanceProfile",
		"EC2NodeClass/shared: spec.instanceStorePolicy",
		"EC2NodeClass/shared: spec.metadataOptions.httpPutResponseHopLimit",
		"NodePool/batch: spec.template.spec.kubelet",
		"NodePool/batch: spec.template.spec.kubelet.imageGCHighThresholdPercent",
		"NodePool/batch: spec.template.spec.requirements[1]",
		"NodePool/batch: spec.template.spec.requirements[2]",
		"NodePool/batch: spec.template.spec.requirements[2]",
		"NodePool/elsewhere: spec.template.spec.kubelet",
		"NodePool/web: spec.template.spec.kubelet",
	}
	if got := warnings(res); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("warnings =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func indexOf(res *Result, o runtime.Object) int {
	for i, x := range res.Objects {
		if x == o {
			return i
		}
	}
	return -1
}

const classV1beta1 = `apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata: {name: c}
spec:
  role: r
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
`

const poolV1 = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: p}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: c}
`

func TestConvertCases(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
		// wantWarn are substrings of the warnings, in order.
		wantWarn []string
		check    func(*Result) bool
	}{
		{name: "AL2 without terms becomes AL2023, with a warning", in: classV1beta1 + "  amiFamily: AL2\n",
			wantWarn: []string{"Amazon Linux 2", "metadataOptions"},
			check:    func(r *Result) bool { return classes(r)["c"].Spec.AMISelectorTerms[0].Alias == "al2023@latest" }},
		{name: "AL2 with images selected becomes Custom", in: classV1beta1 + "  amiFamily: AL2\n  amiSelectorTerms: [{id: ami-0123456789abcdef0}]\n",
			wantWarn: []string{"converted to Custom"},
			check: func(r *Result) bool {
				s := classes(r)["c"].Spec
				return *s.AMIFamily == "Custom" && s.AMISelectorTerms[0].ID == "ami-0123456789abcdef0"
			}},
		{name: "AL2023 with images selected stays AL2023", in: classV1beta1 + "  amiFamily: AL2023\n  amiSelectorTerms: [{tags: {team: x}, owner: self}]\n",
			wantWarn: []string{"metadataOptions"},
			check: func(r *Result) bool {
				s := classes(r)["c"].Spec
				return *s.AMIFamily == "AL2023" && s.AMISelectorTerms[0].Owner == "self" && s.AMISelectorTerms[0].Tags["team"] == "x"
			}},
		{name: "v1 al2 alias becomes al2023", in: strings.Replace(classV1beta1, "v1beta1", "v1", 1) + "  amiSelectorTerms: [{alias: al2@latest}]\n",
			wantWarn: []string{"al2@latest"}},
		{name: "v1 ssmParameter term is reported", in: strings.Replace(classV1beta1, "v1beta1", "v1", 1) + "  amiFamily: AL2023\n  amiSelectorTerms: [{ssmParameter: /my/ami}]\n",
			wantWarn: []string{"spec.amiSelectorTerms[0].ssmParameter has no Nodesmith equivalent"}},
		{name: "Windows is refused", in: classV1beta1 + "  amiFamily: Windows2022\n", wantErr: "Linux nodes only"},
		{name: "Ubuntu without images is refused", in: classV1beta1 + "  amiFamily: Ubuntu\n", wantErr: "no default image"},
		{name: "v1 networking fields without equivalent are reported", in: strings.Replace(classV1beta1, "v1beta1", "v1", 1) +
			"  amiSelectorTerms: [{alias: al2023@latest}]\n  ipPrefixCount: 2\n  capacityReservationSelectorTerms: [{id: cr-1}]\n",
			wantWarn: []string{"spec.capacityReservationSelectorTerms", "spec.ipPrefixCount"}},
		{name: "a pool that only buys reserved capacity is refused", in: strings.Replace(poolV1, "      nodeClassRef",
			"      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [reserved]}]\n      nodeClassRef", 1),
			wantErr: "only launches reserved capacity"},
		{name: "static pools stay static", in: poolV1 + "  replicas: 3\n",
			check: func(r *Result) bool {
				np := pools(r)["p"]
				return np != nil && np.Spec.Replicas != nil && *np.Spec.Replicas == 3
			}},
		{name: "restricted template labels are dropped", in: strings.Replace(poolV1, "    spec:\n      nodeClassRef",
			"    metadata: {labels: {karpenter.sh/nodepool: x, karpenter.sh/do-not-sync-taints: \"true\"}}\n    spec:\n      nodeClassRef", 1),
			wantWarn: []string{"karpenter.sh/do-not-sync-taints has no Nodesmith equivalent", "karpenter.sh/nodepool is set per node"}},
		{name: "a node class of another kind is refused", in: strings.Replace(poolV1, "kind: EC2NodeClass", "kind: KWOKNodeClass", 1),
			wantErr: "has no Nodesmith equivalent"},
		{name: "an unknown consolidation policy is refused", in: poolV1 + "  disruption: {consolidationPolicy: Sometimes}\n", wantErr: "unknown consolidationPolicy"},
		{name: "Expired is dropped from budget reasons (expiry is forceful)",
			in:       poolV1 + "  disruption:\n    budgets: [{nodes: \"1\", reasons: [Drifted, Expired]}, {nodes: \"0\", reasons: [Expired]}]\n",
			wantWarn: []string{"drops Expired", "drops Expired"},
			check: func(r *Result) bool {
				b := pools(r)["p"].Spec.Disruption.Budgets
				return len(b) == 1 && b[0].Nodes == "1" && len(b[0].Reasons) == 1 && b[0].Reasons[0] == nsv1.DisruptionReasonDrifted
			}},
		{name: "a bad duration is refused", in: poolV1 + "  disruption: {consolidateAfter: 3 days}\n", wantErr: "consolidateAfter"},
		{name: "v1alpha5 is refused with the way forward", in: "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: old}\n",
			wantErr: "upgrade it with Karpenter's own migration"},
		{name: "NodeClaims are skipped", in: "apiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: x}\n",
			wantWarn: []string{"skipped"}, check: func(r *Result) bool { return len(r.Objects) == 0 }},
		{name: "other documents pass through", in: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n",
			wantWarn: []string{"passed through unchanged"},
			check: func(r *Result) bool {
				u, ok := r.Objects[0].(*unstructured.Unstructured)
				return ok && u.GetName() == "cm"
			}},
		{name: "a List is expanded", in: "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(poolV1), "\n", "\n  ") + "\n",
			check: func(r *Result) bool { return len(pools(r)) == 1 }},
		{name: "comments and empty documents are ignored", in: "# nothing\n---\n" + poolV1 + "---\n",
			check: func(r *Result) bool { return len(r.Objects) == 1 }},
		{name: "errors name every failing document", in: classV1beta1 + "  amiFamily: Windows2019\n---\n" +
			strings.Replace(classV1beta1, "name: c", "name: d", 1) + "  amiFamily: Ubuntu\n", wantErr: "EC2NodeClass/d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Convert(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ws []string
			for _, w := range res.Warnings {
				ws = append(ws, w.String())
			}
			i := 0
			for _, w := range ws {
				if i < len(tt.wantWarn) && strings.Contains(w, tt.wantWarn[i]) {
					i++
				}
			}
			if i < len(tt.wantWarn) || (len(tt.wantWarn) == 0 && len(ws) > 0) {
				t.Errorf("warnings = %q, want %q", ws, tt.wantWarn)
			}
			if tt.check != nil && !tt.check(res) {
				t.Errorf("converted:\n%s", dump(t, res))
			}
		})
	}
}

// TestConvertGolden pins the whole output of each testdata manifest, with
// its warning comments. go test ./pkg/convert -update rewrites them.
func TestConvertGolden(t *testing.T) {
	for _, name := range []string{"karpenter-v1beta1.yaml", "karpenter-v1beta1-kubelet.yaml", "karpenter-v1.yaml"} {
		t.Run(name, func(t *testing.T) {
			got := dump(t, convertFile(t, name))
			golden := filepath.Join("testdata", strings.TrimSuffix(name, ".yaml")+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (go test ./pkg/convert -update to accept):\n%s", golden, got)
			}
		})
	}
}

// TestWriteJSON checks that JSON output is itself input the
// converter passes through (Nodesmith objects are not Karpenter's) and that
// JSON output carries the same objects.
func TestWriteJSON(t *testing.T) {
	res := convertFile(t, "karpenter-v1.yaml")
	var buf bytes.Buffer
	if err := WriteJSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	again, err := Convert(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Objects) != len(res.Objects) {
		t.Fatalf("objects = %d, want %d", len(again.Objects), len(res.Objects))
	}
	for _, o := range again.Objects {
		u := o.(*unstructured.Unstructured)
		if g := u.GroupVersionKind().Group; g != nsv1.Group && g != awsv1.Group {
			t.Errorf("%s has group %s", u.GetName(), g)
		}
	}
}

func dump(t *testing.T, res *Result) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteYAML(&buf, res); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
