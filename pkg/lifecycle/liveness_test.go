package lifecycle

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func claim(created time.Time, conds ...metav1.Condition) *nsv1.NodeClaim {
	return &nsv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: metav1.NewTime(created)},
		Status:     nsv1.NodeClaimStatus{ProviderID: "aws:///z/i-1", Conditions: conds},
	}
}

func cond(t string, status metav1.ConditionStatus, at time.Time, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: "R", Message: msg, LastTransitionTime: metav1.NewTime(at)}
}

func TestLiveness(t *testing.T) {
	to := Timeouts{Launch: 5 * time.Minute, Registration: 15 * time.Minute}
	deleting := claim(t0)
	now := metav1.NewTime(t0)
	deleting.DeletionTimestamp = &now
	tests := []struct {
		name        string
		claim       *nsv1.NodeClaim
		now         time.Time
		wantDelete  bool
		wantRecheck time.Duration
		wantReason  string
	}{
		{name: "new claim waits for launch", claim: claim(t0), now: t0.Add(time.Minute), wantRecheck: 4 * time.Minute},
		{name: "launch never succeeded", claim: claim(t0, cond(nsv1.ConditionLaunched, metav1.ConditionFalse, t0, "throttled")),
			now: t0.Add(5 * time.Minute), wantDelete: true, wantReason: "not launched within 5m0s: throttled"},
		{name: "the cloud never answered: kept", claim: claim(t0, metav1.Condition{Type: nsv1.ConditionLaunched, Status: metav1.ConditionFalse,
			Reason: ReasonCloudUnavailable, Message: "RequestLimitExceeded", LastTransitionTime: metav1.NewTime(t0)}),
			now: t0.Add(time.Hour)},
		{name: "the cloud never answered, but not yet late", claim: claim(t0, metav1.Condition{Type: nsv1.ConditionLaunched, Status: metav1.ConditionFalse,
			Reason: ReasonCloudUnavailable, LastTransitionTime: metav1.NewTime(t0)}),
			now: t0.Add(time.Minute), wantRecheck: 4 * time.Minute},
		{name: "no launch condition at all", claim: claim(t0), now: t0.Add(6 * time.Minute), wantDelete: true, wantReason: "no launch attempt recorded"},
		{name: "launched, waiting for registration", claim: claim(t0, cond(nsv1.ConditionLaunched, metav1.ConditionTrue, t0.Add(time.Minute), "")),
			now: t0.Add(10 * time.Minute), wantRecheck: 6 * time.Minute},
		{name: "registration timed out", claim: claim(t0, cond(nsv1.ConditionLaunched, metav1.ConditionTrue, t0.Add(time.Minute), "")),
			now: t0.Add(16 * time.Minute), wantDelete: true, wantReason: "no Node registered within 15m0s"},
		{name: "registered claims are never timed out here", claim: claim(t0,
			cond(nsv1.ConditionLaunched, metav1.ConditionTrue, t0, ""), cond(nsv1.ConditionRegistered, metav1.ConditionTrue, t0, "")),
			now: t0.Add(48 * time.Hour)},
		{name: "deleting claims are left to termination", claim: deleting, now: t0.Add(48 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Liveness(tt.claim, tt.now, to)
			if v.Delete != tt.wantDelete || v.RecheckAfter != tt.wantRecheck {
				t.Fatalf("Liveness = %+v, want delete %v recheck %v", v, tt.wantDelete, tt.wantRecheck)
			}
			if !strings.Contains(v.Reason, tt.wantReason) {
				t.Fatalf("reason %q does not contain %q", v.Reason, tt.wantReason)
			}
		})
	}
}
