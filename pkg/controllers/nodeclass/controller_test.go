package nodeclass

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/providers/aws"
)

func TestApply(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	ok := &aws.Resolved{
		Subnets:         []aws.ResolvedSubnet{{Subnet: awsv1.Subnet{ID: "subnet-1", Zone: "us-east-1a"}}},
		SecurityGroups:  []awsv1.SecurityGroup{{ID: "sg-1"}},
		AMIs:            []awsv1.AMI{{ID: "ami-1", Architecture: "amd64"}},
		InstanceProfile: "profile",
	}
	noSubnets := &aws.ResolveError{Condition: awsv1.ConditionSubnetsReady, Reason: "SubnetsNotFound",
		Message: "no subnets matched selector {nodesmith.sh/discovery: lab}: check the nodesmith.sh/discovery tag on at least one private subnet per zone"}
	tests := []struct {
		name        string
		before      []metav1.Condition
		resolved    *aws.Resolved
		err         error
		wantReady   metav1.ConditionStatus
		wantReason  string
		wantSubnets int
	}{
		{name: "everything resolves", resolved: ok, wantReady: metav1.ConditionTrue, wantReason: "Ready", wantSubnets: 1},
		{name: "no subnets: Ready carries the hint", err: noSubnets, wantReady: metav1.ConditionFalse, wantReason: "SubnetsNotFound"},
		{name: "a transient error changes nothing", err: errors.New("throttled"),
			before:    []metav1.Condition{{Type: awsv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: now}},
			wantReady: metav1.ConditionTrue, wantReason: "Ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &awsv1.EC2NodeClassStatus{Conditions: tt.before}
			Apply(st, tt.resolved, tt.err, 1, now)
			ready := meta.FindStatusCondition(st.Conditions, awsv1.ConditionReady)
			if ready == nil || ready.Status != tt.wantReady || ready.Reason != tt.wantReason {
				t.Fatalf("Ready = %+v, want %s %s", ready, tt.wantReady, tt.wantReason)
			}
			if tt.err == noSubnets && ready.Message != noSubnets.Message {
				t.Fatalf("Ready message = %q, want the resolver's hint", ready.Message)
			}
			if tt.err == noSubnets {
				for _, p := range parts[1:] {
					if c := meta.FindStatusCondition(st.Conditions, p); c == nil || c.Status != metav1.ConditionUnknown {
						t.Errorf("%s = %+v after subnets failed, want Unknown (not checked)", p, c)
					}
				}
			}
			if len(st.Subnets) != tt.wantSubnets {
				t.Fatalf("subnets = %v, want %d", st.Subnets, tt.wantSubnets)
			}
		})
	}
}
