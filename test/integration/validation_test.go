package integration

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	v1 "github.com/nodesmith/nodesmith/apis/v1"
	nsv1alpha1 "github.com/nodesmith/nodesmith/apis/v1alpha1"
)

func pool(mutate func(*v1.NodePool)) client.Object {
	np := validNodePool("invalid")
	mutate(np)
	return np
}

func nodeClass(mutate func(*awsv1.EC2NodeClass)) client.Object {
	nc := validNodeClass("invalid")
	mutate(nc)
	return nc
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirementWithMinValues {
	return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func setReqs(reqs ...v1.NodeSelectorRequirementWithMinValues) func(*v1.NodePool) {
	return func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements = reqs }
}

func setBudget(b v1.Budget) func(*v1.NodePool) {
	return func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{b} }
}

func setTags(tags map[string]string) client.Object {
	return nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Spec.Tags = tags })
}

func manyTags(n int) map[string]string {
	out := make(map[string]string, n)
	for i := 0; i < n; i++ {
		out[fmt.Sprintf("team-%d", i)] = "x"
	}
	return out
}

// manyReqs are n requirements on distinct custom labels.
func manyReqs(n int) func(*v1.NodePool) {
	reqs := make([]v1.NodeSelectorRequirementWithMinValues, n)
	for i := range reqs {
		reqs[i] = req(fmt.Sprintf("example.com/label-%d", i), corev1.NodeSelectorOpIn, "x")
	}
	return setReqs(reqs...)
}

// manyBudgets are n budgets of one node each.
func manyBudgets(n int) func(*v1.NodePool) {
	return func(np *v1.NodePool) {
		np.Spec.Disruption.Budgets = make([]v1.Budget, n)
		for i := range np.Spec.Disruption.Budgets {
			np.Spec.Disruption.Budgets[i] = v1.Budget{Nodes: "1"}
		}
	}
}

func setLabels(labels map[string]string) func(*v1.NodePool) {
	return func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels = labels }
}

func rawDuration(s string) v1.NillableDuration {
	return v1.NillableDuration{Raw: []byte(`"` + s + `"`)}
}

// TestValidObjectsAreAccepted is the control for TestInvalidObjectsAreRefused:
// the objects the cases break are themselves fine.
func ptrStr(s string) *string { return &s }

func overlay(mutate func(*nsv1alpha1.NodeOverlaySpec)) client.Object {
	o := &nsv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "overlay"}}
	mutate(&o.Spec)
	return o
}

func commitment(spec nsv1alpha1.CommitmentSpec) client.Object {
	return &nsv1alpha1.Commitment{ObjectMeta: metav1.ObjectMeta{Name: "commitment"}, Spec: spec}
}

func TestValidObjectsAreAccepted(t *testing.T) {
	everyReason := validNodePool("valid-reasons")
	everyReason.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1", Reasons: v1.DisruptionReasons}}
	// Limits of 0 on any resource and the node count are fine.
	zeroLimits := validNodePool("valid-zero-limits")
	zeroLimits.Spec.Limits = v1.Limits{"cpu": resource.MustParse("0"), "nvidia.com/gpu": resource.MustParse("0"), v1.ResourceNodes: resource.MustParse("0")}
	// EC2's own bounds: 50 tags, 128-character keys, 256-character values,
	// aws in a key other than as its prefix.
	edgeTags := validNodeClass("valid-edge-tags")
	edgeTags.Spec.Tags = manyTags(48)
	edgeTags.Spec.Tags[strings.Repeat("k", 128)] = strings.Repeat("v", 256)
	edgeTags.Spec.Tags["team/aws:x"] = ""
	// Template labels Kubernetes lets through: the well-known ones and the
	// node, kubelet, node-restriction and kops domains.
	allowedLabels := validNodePool("valid-labels")
	setLabels(map[string]string{"team": "a", "example.com/team": "a", "topology.kubernetes.io/zone": "us-east-1a", "kubernetes.io/arch": "amd64",
		"node.kubernetes.io/role": "web", "kubelet.kubernetes.io/x": "y", "node-restriction.kubernetes.io/team": "a", "kops.k8s.io/instancegroup": "nodes"})(allowedLabels)
	// Karpenter's bounds: 100 requirements, 50 budgets.
	mostReqs, mostBudgets := validNodePool("valid-100-requirements"), validNodePool("valid-50-budgets")
	manyReqs(100)(mostReqs)
	manyBudgets(50)(mostBudgets)
	for _, obj := range []client.Object{validNodePool("valid"), validNodeClass("valid"), validNodeClaim("valid"), everyReason, zeroLimits, edgeTags, mostReqs, mostBudgets, allowedLabels,
		overlay(func(s *nsv1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptrStr("-10%") }),
		overlay(func(s *nsv1alpha1.NodeOverlaySpec) { s.Price = ptrStr("0.125") }),
		overlay(func(s *nsv1alpha1.NodeOverlaySpec) {
			s.Capacity = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("1Gi")}
		})} {
		if err := env.Client.Create(t.Context(), obj, client.DryRunAll); err != nil {
			t.Errorf("%T refused: %v", obj, err)
		}
	}
}

// TestInvalidObjectsAreRefused checks that each mistake a user can make is
// refused by the API server itself (CRD schema and CEL rules, no webhook) and
// that the message says what is wrong.
func TestInvalidObjectsAreRefused(t *testing.T) {
	tests := []struct {
		name string
		obj  client.Object
		want string
	}{
		{"In without values", pool(setReqs(req("kubernetes.io/arch", "In"))),
			"operator In needs at least one value"},
		{"Gt with two values", pool(setReqs(req("aws.nodesmith.sh/instance-cpu", "Gt", "4", "8"))),
			"operators Gt, Lt, Gte and Lte take exactly one value, a non-negative integer"},
		{"Gt without a value", pool(setReqs(req("aws.nodesmith.sh/instance-cpu", "Gt"))),
			"operators Gt, Lt, Gte and Lte take exactly one value, a non-negative integer"},
		{"Gte with a negative number", pool(setReqs(req("aws.nodesmith.sh/instance-cpu", v1.NodeSelectorOpGte, "-1"))),
			"operators Gt, Lt, Gte and Lte take exactly one value, a non-negative integer"},
		{"Lte with a word", pool(setReqs(req("aws.nodesmith.sh/instance-generation", v1.NodeSelectorOpLte, "five"))),
			"operators Gt, Lt, Gte and Lte take exactly one value, a non-negative integer"},
		{"Exists with values", pool(setReqs(req("aws.nodesmith.sh/instance-gpu-count", "Exists", "1"))),
			"operators Exists and DoesNotExist take no values"},
		{"unknown operator", pool(setReqs(req("kubernetes.io/arch", "Near", "amd64"))),
			`Unsupported value: "Near"`},
		{"minValues above the number of values", pool(func(np *v1.NodePool) {
			r := req("aws.nodesmith.sh/instance-family", "In", "c5", "m5")
			r.MinValues = ptr(3)
			np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{r}
		}), "minValues must not exceed the number of values"},
		{"requirement on kubernetes.io/hostname", pool(setReqs(req("kubernetes.io/hostname", "In", "ip-10-0-0-1"))),
			"requirements may not use restricted label keys"},
		{"requirement on nodesmith.sh/nodepool", pool(setReqs(req(v1.LabelNodePool, "In", "other"))),
			"requirements may not use restricted label keys"},
		{"template label nodesmith.sh/nodepool", pool(func(np *v1.NodePool) {
			np.Spec.Template.ObjectMeta.Labels = map[string]string{v1.LabelNodePool: "x"}
		}), "labels may not use restricted keys"},
		{"template label in the kubernetes.io domain", pool(setLabels(map[string]string{"team": "a", "example.kubernetes.io/team": "a"})),
			"label example.kubernetes.io/team is in a domain Kubernetes reserves (kubernetes.io, k8s.io)"},
		{"template label in the k8s.io domain", pool(setLabels(map[string]string{"k8s.io/team": "a"})),
			"label k8s.io/team is in a domain Kubernetes reserves"},
		{"missing nodeClassRef", pool(func(np *v1.NodePool) { np.Spec.Template.Spec.NodeClassRef = nil }),
			"spec.template.spec.nodeClassRef: Required value"},
		{"expireAfter in days", pool(func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = rawDuration("30d") }),
			"expireAfter must be a duration in whole hours, minutes or seconds (720h, 90m, 1h30m) or Never"},
		{"terminationGracePeriod in days", unstructuredWith(t, validNodePool("invalid"), "3d", "spec", "template", "spec", "terminationGracePeriod"),
			"terminationGracePeriod must be a duration in whole hours, minutes or seconds (30s, 10m, 1h)"},
		{"NodeClaim expireAfter a word", unstructuredWith(t, validNodeClaim("invalid"), "a month", "spec", "expireAfter"),
			"expireAfter must be a duration in whole hours, minutes or seconds (720h, 90m, 1h30m) or Never"},
		{"consolidateAfter not a duration", pool(func(np *v1.NodePool) { np.Spec.Disruption.ConsolidateAfter = rawDuration("soon") }),
			"consolidateAfter must be a duration in whole hours, minutes or seconds (0s, 30s, 5m, 1h) or Never"},
		{"unknown consolidation policy", pool(func(np *v1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = "Always" }),
			`Unsupported value: "Always": supported values: "WhenEmpty", "WhenEmptyOrUnderutilized"`},
		{"budget schedule without duration", pool(setBudget(v1.Budget{Nodes: "0", Schedule: ptr("@daily")})),
			"schedule and duration must be set together"},
		{"budget duration without schedule", pool(setBudget(v1.Budget{Nodes: "0", Duration: &metav1.Duration{Duration: 3600e9}})),
			"schedule and duration must be set together"},
		{"budget nodes a word", pool(setBudget(v1.Budget{Nodes: "ten"})),
			`nodes must be a whole number ("5") or a percentage from 0% to 100% ("10%")`},
		{"budget nodes above 100%", pool(setBudget(v1.Budget{Nodes: "150%"})),
			`nodes must be a whole number ("5") or a percentage from 0% to 100% ("10%")`},
		{"budget schedule with four fields", pool(setBudget(v1.Budget{Nodes: "0", Schedule: ptr("0 9 * *"), Duration: &metav1.Duration{Duration: 3600e9}})),
			"schedule must be a cron expression of five fields"},
		{"budget duration in seconds", pool(setBudget(v1.Budget{Nodes: "0", Schedule: ptr("@daily"), Duration: &metav1.Duration{Duration: 30e9}})),
			"duration must be whole hours and/or minutes (8h, 30m, 1h30m)"},
		{"budget reason unknown", pool(setBudget(v1.Budget{Nodes: "1", Reasons: []v1.DisruptionReason{"Interrupted"}})),
			`Unsupported value: "Interrupted": supported values: "Empty", "Underutilized", "Drifted", "Expired", "Rebalance", "ReturnToSpot"`},
		{"budget reason Expired (expiry is forceful)", pool(setBudget(v1.Budget{Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted, v1.DisruptionReasonExpired}})),
			"Expired is not a budget reason: expiry is forceful, as in Karpenter v1, and no budget holds it"},
		{"unknown returnToSpot", pool(func(np *v1.NodePool) { np.Spec.Disruption.ReturnToSpot = "Sometimes" }),
			`Unsupported value: "Sometimes": supported values: "Enabled", "Disabled"`},
		{"spot risk ceiling of 0", pool(func(np *v1.NodePool) { np.Spec.Template.Spec.MaxSpotInterruptionRisk = ptr[int32](0) }),
			"maxSpotInterruptionRisk: Invalid value: 0: spec.template.spec.maxSpotInterruptionRisk in body should be greater than or equal to 1"},
		{"spot risk ceiling above 100", pool(func(np *v1.NodePool) { np.Spec.Template.Spec.MaxSpotInterruptionRisk = ptr[int32](101) }),
			"should be less than or equal to 100"},
		{"negative cpu limit", pool(func(np *v1.NodePool) { np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("-1")} }),
			"limits must not be negative; got a negative cpu"},
		{"negative GPU limit", pool(func(np *v1.NodePool) {
			np.Spec.Limits = v1.Limits{"memory": resource.MustParse("10Gi"), "nvidia.com/gpu": resource.MustParse("-2")}
		}), "limits must not be negative; got a negative nvidia.com/gpu"},
		{"negative node limit", pool(func(np *v1.NodePool) { np.Spec.Limits = v1.Limits{v1.ResourceNodes: resource.MustParse("-5")} }),
			"limits must not be negative; got a negative nodes"},
		{"weight above 100", pool(func(np *v1.NodePool) { np.Spec.Weight = ptr[int32](101) }),
			"spec.weight: Invalid value: 101: spec.weight in body should be less than or equal to 100"},
		{"option price ceiling below the cheapest price", pool(func(np *v1.NodePool) { np.Spec.OptionPriceCeilingPercent = ptr[int32](50) }),
			"spec.optionPriceCeilingPercent in body should be greater than or equal to 100"},
		{"option price ceiling above 100x", pool(func(np *v1.NodePool) { np.Spec.OptionPriceCeilingPercent = ptr[int32](20000) }),
			"spec.optionPriceCeilingPercent in body should be less than or equal to 10000"},

		{"both role and instanceProfile", nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Spec.InstanceProfile = ptr("profile") }),
			"set exactly one of role or instanceProfile"},
		{"neither role nor instanceProfile", nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Spec.Role = nil }),
			"set exactly one of role or instanceProfile"},
		{"no subnet selector terms", nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{} }),
			"subnetSelectorTerms needs at least one term"},
		{"no security group selector terms", nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{}
		}), "securityGroupSelectorTerms needs at least one term"},
		{"empty subnet selector term", nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{}} }),
			"a subnet selector term needs tags or id"},
		{"subnet id with tags", nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-0abc", Tags: map[string]string{"a": "b"}}}
		}), "id cannot be combined with other fields in a subnet selector term"},
		{"empty capacity reservation selector term", nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{}}
		}), "a capacity reservation selector term needs id or tags"},
		{"capacity reservation id with owner", nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0abc", OwnerID: "123456789012"}}
		}), "id cannot be combined with other fields in a capacity reservation selector term"},
		{"capacity reservation id malformed", nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "odcr-1"}}
		}), "capacityReservationSelectorTerms[0].id"},
		{"capacity reservation owner not an account", nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "ml"}, OwnerID: "me"}}
		}), "capacityReservationSelectorTerms[0].ownerID"},
		{"security group id with name", nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{ID: "sg-0abc", Name: "nodes"}}
		}), "id cannot be combined with other fields in a security group selector term"},
		{"empty tag value", nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"nodesmith.sh/discovery": ""}}}
		}), "empty tag keys or values aren't supported"},
		{"AMI alias with id", nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest", ID: "ami-0abc"}}
		}), "alias cannot be combined with other fields in an AMI selector term"},
		{"AMI alias next to another term", nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}, {ID: "ami-0abc"}}
		}), "an alias term must be the only AMI selector term"},
		{"amiFamily against the alias", nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Spec.AMIFamily = ptr("Bottlerocket") }),
			"amiFamily must match the alias family"},
		{"tag owned by Nodesmith", setTags(map[string]string{awsv1.TagCluster: "other"}),
			"tag key nodesmith.sh/cluster is set by Nodesmith"},
		{"tag of the node class Nodesmith sets", setTags(map[string]string{awsv1.LabelEC2NodeClass: "x"}),
			"tag key aws.nodesmith.sh/ec2nodeclass is set by Nodesmith"},
		{"tag key starting with aws:", setTags(map[string]string{"aws:cloudformation:stack-name": "x"}),
			"tag keys starting with aws: are reserved by AWS; got aws:cloudformation:stack-name"},
		{"tag key starting with AWS: in another case", setTags(map[string]string{"AWS:Team": "x"}),
			"tag keys starting with aws: are reserved by AWS; got AWS:Team"},
		{"empty tag key", setTags(map[string]string{"": "x"}), "empty tag keys are not allowed"},
		{"tag key of 129 characters", setTags(map[string]string{strings.Repeat("k", 129): "x"}),
			"tag keys must be at most 128 characters; got " + strings.Repeat("k", 129)},
		{"tag value of 257 characters", setTags(map[string]string{"team": strings.Repeat("v", 257)}),
			"tag values must be at most 256 characters; the value of team is longer"},
		{"51 tags", setTags(manyTags(51)), "spec.tags: Too many: 51: must have at most 50 items"},
		{"101 requirements", pool(manyReqs(101)), "spec.template.spec.requirements: Too many: 101: must have at most 100 items"},
		{"51 budgets", pool(manyBudgets(51)), "spec.disruption.budgets: Too many: 51: must have at most 50 items"},
		{"tag kubernetes.io/cluster/<name>", setTags(map[string]string{"kubernetes.io/cluster/prod": "owned"}),
			"tag key kubernetes.io/cluster/prod is reserved for the cluster"},
		{"tag eks:eks-cluster-name", setTags(map[string]string{"eks:eks-cluster-name": "prod"}),
			"tag key eks:eks-cluster-name is reserved for the cluster"},
		{"unknown systemReserved key", nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Kubelet = &awsv1.KubeletConfiguration{SystemReserved: map[string]string{"gpu": "1"}}
		}), "systemReserved keys must be cpu, memory, ephemeral-storage or pid"},

		{"NodeOverlay unsigned priceAdjustment", overlay(func(s *nsv1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptrStr("10%") }),
			"priceAdjustment must be a signed amount such as +0.1 or -0.05, or a percentage such as -10%; got 10%"},
		{"NodeOverlay price and priceAdjustment", overlay(func(s *nsv1alpha1.NodeOverlaySpec) { s.Price, s.PriceAdjustment = ptrStr("1"), ptrStr("+1") }),
			"price and priceAdjustment are exclusive"},
		{"NodeOverlay negative price", overlay(func(s *nsv1alpha1.NodeOverlaySpec) { s.Price = ptrStr("-0.5") }),
			"got -0.5"},
		{"NodeOverlay overlaying cpu", overlay(func(s *nsv1alpha1.NodeOverlaySpec) { s.Capacity = corev1.ResourceList{"cpu": resource.MustParse("1")} }),
			"capacity may only add extended resources"},
		{"NodeOverlay that changes nothing", overlay(func(s *nsv1alpha1.NodeOverlaySpec) {}),
			"an overlay must change something"},
		{"Commitment RI without family", commitment(nsv1alpha1.CommitmentSpec{Type: nsv1alpha1.CommitmentReservedInstance, HourlyCommitment: "1", Region: "us-east-1"}),
			"an EC2InstanceSavingsPlan or ReservedInstance needs family and region"},
		{"Commitment compute with a family", commitment(nsv1alpha1.CommitmentSpec{Type: nsv1alpha1.CommitmentComputeSavingsPlan, HourlyCommitment: "1", Family: "m5"}),
			"a ComputeSavingsPlan covers every family and region"},
		{"Commitment of nothing", commitment(nsv1alpha1.CommitmentSpec{Type: nsv1alpha1.CommitmentComputeSavingsPlan, HourlyCommitment: "0"}),
			"hourlyCommitment must be a positive decimal number of dollars per hour such as 2.5; got 0"},
		{"NodeClaim In without values", func() client.Object {
			nc := validNodeClaim("invalid")
			nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{req("node.kubernetes.io/instance-type", "In")}
			return nc
		}(), "operator In needs at least one value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := env.Client.Create(t.Context(), tt.obj, client.DryRunAll)
			if err == nil {
				t.Fatalf("accepted, want refused with %q", tt.want)
			}
			t.Logf("refused: %v", err)
			if !apierrors.IsInvalid(err) {
				t.Errorf("error is not Invalid: %v", err)
			}
			// A rule that errors out (e.g. reading an absent field) also
			// refuses the object, but with a message about CEL, not the user's mistake.
			if strings.Contains(err.Error(), "evaluating rule") {
				t.Errorf("a validation rule failed to evaluate instead of judging the object: %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("message\n  %v\nwant it to contain\n  %s", err, tt.want)
			}
		})
	}
}
