package aws

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

func TestLaunchTemplateReuse(t *testing.T) {
	e := newEnv(t, envOpts{})
	reqs := reqIn(corev1.LabelInstanceTypeStable, "m5.large", "c5.large")
	e.create(newClaim("a", reqs))
	e.create(newClaim("b", reqs))
	if got := e.world.Stats()["CreateLaunchTemplate"]; got != 1 {
		t.Errorf("CreateLaunchTemplate calls = %d, want 1", got)
	}
	// A new provider (a restart) finds the template by name instead of making another.
	p2, err := New(Config{EC2: e.ec2, SSM: e.ssm, Clock: e.clock, Unavailable: e.ice, Cluster: e.p.cluster, NodeClasses: e.getNodeClass, Options: e.p.opts})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p2.Create(e.ctx, newClaim("c", reqs)); err != nil {
		t.Fatal(err)
	}
	if got := e.world.Stats()["CreateLaunchTemplate"]; got != 1 {
		t.Errorf("after restart CreateLaunchTemplate calls = %d, want 1", got)
	}
	// Different settings (another pool's labels) get their own template.
	other := newClaim("d", reqs)
	other.Labels[nsv1.LabelNodePool] = "batch"
	e.create(other)
	if got := e.world.Stats()["CreateLaunchTemplate"]; got != 2 {
		t.Errorf("CreateLaunchTemplate calls = %d, want 2", got)
	}
}

func TestUserDataCarriesLabelsAndTaints(t *testing.T) {
	tests := []struct {
		name   string
		family *string
		alias  string
	}{
		{name: "al2023", alias: "al2023@latest"},
		{name: "bottlerocket", alias: "bottlerocket@latest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			nc := defaultNodeClass()
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: tt.alias}}
			e.addNodeClass(nc)
			claim := newClaim("c1")
			claim.Spec.StartupTaints = []corev1.Taint{{Key: "cni-not-ready", Effect: corev1.TaintEffectNoSchedule}}
			// Labels a kubelet may not set itself: registration puts them on
			// the Node, so they stay out of the user data.
			claim.Labels["node-restriction.kubernetes.io/team"] = "a"
			claim.Labels["kops.k8s.io/instancegroup"] = "nodes"
			claim.Labels["node.kubernetes.io/role"] = "web"
			got := e.create(claim)
			in := e.world.Instances()[0]
			labels, taints, err := ParseUserData(in.UserData)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range map[string]string{nsv1.LabelNodePool: "default", "team": "a", nsv1.LabelCapacityType: got.Status.CapacityType, "node.kubernetes.io/role": "web"} {
				if labels[k] != v {
					t.Errorf("label %s = %q, want %q (all: %v)", k, labels[k], v, labels)
				}
			}
			for _, k := range []string{"node-restriction.kubernetes.io/team", "kops.k8s.io/instancegroup"} {
				if _, ok := labels[k]; ok {
					t.Errorf("label %s in the user data: a kubelet given it refuses to start", k)
				}
				if got.Labels[k] == "" {
					t.Errorf("label %s dropped from the claim: registration would not put it on the Node", k)
				}
			}
			want := map[string]bool{nsv1.UnregisteredTaint.Key: false, "dedicated": false, "cni-not-ready": false}
			for _, tn := range taints {
				if _, ok := want[tn.Key]; ok {
					want[tn.Key] = true
				}
				if tn.Key == nsv1.UnregisteredTaint.Key && tn.Effect != nsv1.UnregisteredTaint.Effect {
					t.Errorf("unregistered taint effect = %s", tn.Effect)
				}
			}
			for k, seen := range want {
				if !seen {
					t.Errorf("taint %s missing from user data", k)
				}
			}
		})
	}
}

func TestDeletedLaunchTemplateIsRecreated(t *testing.T) {
	e := newEnv(t, envOpts{})
	reqs := reqIn(corev1.LabelInstanceTypeStable, "m5.large")
	e.create(newClaim("a", reqs))
	out, err := e.ec2.DescribeLaunchTemplates(e.ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil || len(out.LaunchTemplates) != 1 {
		t.Fatalf("templates: %v, %d", err, len(out.LaunchTemplates))
	}
	if _, err := e.ec2.DeleteLaunchTemplate(e.ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: out.LaunchTemplates[0].LaunchTemplateName}); err != nil {
		t.Fatal(err)
	}
	got := e.create(newClaim("b", reqs))
	if got.Status.ProviderID == "" {
		t.Fatal("no instance after the template was recreated")
	}
	if n := e.world.Stats()["CreateLaunchTemplate"]; n != 2 {
		t.Errorf("CreateLaunchTemplate calls = %d, want 2", n)
	}
}

func TestLaunchTemplateContent(t *testing.T) {
	e := newEnv(t, envOpts{})
	nc := defaultNodeClass()
	size := resource.MustParse("100Gi")
	iops := int64(4000)
	nc.Spec.BlockDeviceMappings = []awsv1.BlockDeviceMapping{{DeviceName: aws.String("/dev/xvda"), RootVolume: true,
		EBS: &awsv1.BlockDevice{VolumeSize: &size, VolumeType: aws.String("gp3"), IOPS: &iops, Encrypted: aws.Bool(true)}}}
	e.addNodeClass(nc)
	got := e.create(newClaim("c1", reqIn(corev1.LabelInstanceTypeStable, "m5.large")))
	lts := e.world.LaunchTemplates()
	if len(lts) != 1 {
		t.Fatalf("templates = %d, want 1", len(lts))
	}
	lt := lts[0]
	want := map[string]string{
		"MetadataOptions.HttpTokens":              "required",
		"MetadataOptions.HttpPutResponseHopLimit": "1",
		"MetadataOptions.HttpEndpoint":            "enabled",
		"IamInstanceProfile.Name":                 ManagedInstanceProfileName(testCluster, catalog.DefaultRegion, "default"),
		"BlockDeviceMapping.1.DeviceName":         "/dev/xvda",
		"BlockDeviceMapping.1.Ebs.VolumeSize":     "100",
		"BlockDeviceMapping.1.Ebs.Iops":           "4000",
		"BlockDeviceMapping.1.Ebs.Encrypted":      "true",
	}
	for k, v := range want {
		if lt.Data[k] != v {
			t.Errorf("template %s = %q, want %q", k, lt.Data[k], v)
		}
	}
	if lt.ImageID != got.Status.ImageID || len(lt.SecurityGroupIDs) != 1 || !strings.HasPrefix(lt.Name, "nodesmith/") {
		t.Errorf("template image %s sgs %v name %s", lt.ImageID, lt.SecurityGroupIDs, lt.Name)
	}
	if got.Labels[awsv1.LabelEC2NodeClass] != "default" {
		t.Errorf("launched claim's %s label = %q, want the node class, default", awsv1.LabelEC2NodeClass, got.Labels[awsv1.LabelEC2NodeClass])
	}
	// The root volume size is the node's ephemeral storage.
	if eph := got.Status.Capacity[corev1.ResourceEphemeralStorage]; eph.Cmp(size) != 0 {
		t.Errorf("ephemeral-storage capacity = %s, want %s", eph.String(), size.String())
	}
}

// TestLaunchTemplateSettings reads back from the launch template, as EC2
// stored it, the node class settings that change nothing Nodesmith plans
// with: the family's default volumes, detailed monitoring, the public IP
// switch and the kubelet's cluster DNS.
func TestLaunchTemplateSettings(t *testing.T) {
	al2023, bottlerocket := "al2023@latest", "bottlerocket@latest"
	tests := []struct {
		name  string
		alias string
		set   func(*awsv1.EC2NodeClass)
		want  map[string]string // template keys; "" means absent
		// userData must be in the instance's user data.
		userData []string
	}{
		{name: "AL2023 defaults", alias: al2023, want: map[string]string{
			"BlockDeviceMapping.1.DeviceName": "/dev/xvda", "BlockDeviceMapping.1.Ebs.VolumeSize": "20",
			"BlockDeviceMapping.1.Ebs.VolumeType": "gp3", "BlockDeviceMapping.1.Ebs.Encrypted": "true",
			"BlockDeviceMapping.2.DeviceName": "",
			"Monitoring.Enabled":              "false", "NetworkInterface.1.AssociatePublicIpAddress": "",
		}},
		{name: "Bottlerocket defaults: an OS volume and a data volume", alias: bottlerocket, want: map[string]string{
			"BlockDeviceMapping.1.DeviceName": "/dev/xvda", "BlockDeviceMapping.1.Ebs.VolumeSize": "4",
			"BlockDeviceMapping.1.Ebs.VolumeType": "gp3", "BlockDeviceMapping.1.Ebs.Encrypted": "true",
			"BlockDeviceMapping.2.DeviceName": "/dev/xvdb", "BlockDeviceMapping.2.Ebs.VolumeSize": "20",
			"BlockDeviceMapping.2.Ebs.VolumeType": "gp3", "BlockDeviceMapping.2.Ebs.Encrypted": "true",
		}},
		{name: "detailed monitoring", alias: al2023, set: func(nc *awsv1.EC2NodeClass) { nc.Spec.DetailedMonitoring = aws.Bool(true) },
			want: map[string]string{"Monitoring.Enabled": "true"}},
		{name: "no public IP whatever the subnet says", alias: al2023, set: func(nc *awsv1.EC2NodeClass) { nc.Spec.AssociatePublicIPAddress = aws.Bool(false) },
			want: map[string]string{"NetworkInterface.1.AssociatePublicIpAddress": "false", "NetworkInterface.1.DeviceIndex": "0"}},
		{name: "a public IP whatever the subnet says", alias: al2023, set: func(nc *awsv1.EC2NodeClass) { nc.Spec.AssociatePublicIPAddress = aws.Bool(true) },
			want: map[string]string{"NetworkInterface.1.AssociatePublicIpAddress": "true"}},
		{name: "AL2023 cluster DNS", alias: al2023,
			set: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.Kubelet = &awsv1.KubeletConfiguration{ClusterDNS: []string{"10.100.0.10"}}
			},
			userData: []string{"clusterDNS:\n      - 10.100.0.10\n"}},
		{name: "Bottlerocket cluster DNS", alias: bottlerocket,
			set: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.Kubelet = &awsv1.KubeletConfiguration{ClusterDNS: []string{"10.100.0.10"}}
			},
			userData: []string{`cluster-dns-ip = ["10.100.0.10"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			nc := defaultNodeClass()
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: tt.alias}}
			if tt.set != nil {
				tt.set(nc)
			}
			e.resyncClass(t, nc)
			got := e.create(newClaim("c1", reqIn(corev1.LabelInstanceTypeStable, "m5.large")))
			lts := e.world.LaunchTemplates()
			if len(lts) != 1 {
				t.Fatalf("templates = %d, want 1", len(lts))
			}
			for k, v := range tt.want {
				if have, ok := lts[0].Data[k]; have != v || (v == "" && ok) {
					t.Errorf("template %s = %q (set %v), want %q", k, have, ok, v)
				}
			}
			id, _ := ParseProviderID(got.Status.ProviderID)
			in, ok := e.world.Instance(id)
			if !ok {
				t.Fatalf("instance %s not found", id)
			}
			for _, s := range tt.userData {
				if !strings.Contains(in.UserData, s) {
					t.Errorf("user data lacks %q:\n%s", s, in.UserData)
				}
			}
		})
	}
}
