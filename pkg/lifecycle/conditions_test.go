package lifecycle

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func TestClaimReady(t *testing.T) {
	tr := func(ty string) metav1.Condition { return cond(ty, metav1.ConditionTrue, t0, "") }
	tests := []struct {
		name       string
		conds      []metav1.Condition
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "nothing yet", wantStatus: metav1.ConditionFalse, wantReason: "NotLaunched", wantMsg: "waiting for Launched"},
		{name: "launch failing carries the message", conds: []metav1.Condition{cond(nsv1.ConditionLaunched, metav1.ConditionFalse, t0, "throttled")},
			wantStatus: metav1.ConditionFalse, wantReason: "NotLaunched", wantMsg: "throttled"},
		{name: "launched", conds: []metav1.Condition{tr(nsv1.ConditionLaunched)}, wantStatus: metav1.ConditionFalse, wantReason: "NotRegistered", wantMsg: "waiting for Registered"},
		{name: "registered", conds: []metav1.Condition{tr(nsv1.ConditionLaunched), tr(nsv1.ConditionRegistered)}, wantStatus: metav1.ConditionFalse, wantReason: "NotInitialized", wantMsg: "waiting for Initialized"},
		{name: "all", conds: []metav1.Condition{tr(nsv1.ConditionLaunched), tr(nsv1.ConditionRegistered), tr(nsv1.ConditionInitialized)}, wantStatus: metav1.ConditionTrue, wantReason: "Ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ClaimReady(tt.conds)
			if c.Type != nsv1.ConditionReady || c.Status != tt.wantStatus || c.Reason != tt.wantReason || c.Message != tt.wantMsg {
				t.Fatalf("ClaimReady = %+v, want %s %s %q", c, tt.wantStatus, tt.wantReason, tt.wantMsg)
			}
		})
	}
}

func TestPoolReadyAndAllReady(t *testing.T) {
	bad := metav1.Condition{Type: nsv1.ConditionNodeClassReady, Status: metav1.ConditionFalse, Reason: "NodeClassNotFound", Message: "ec2nodeclass default not found"}
	ok := func(ty string) metav1.Condition { return cond(ty, metav1.ConditionTrue, t0, "") }
	tests := []struct {
		name       string
		got        metav1.Condition
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{name: "pool without conditions waits for its node class first", got: PoolReady(nil), wantStatus: metav1.ConditionFalse, wantReason: "NotNodeClassReady"},
		{name: "pool whose validation failed", got: PoolReady([]metav1.Condition{ok(nsv1.ConditionNodeClassReady),
			{Type: nsv1.ConditionValidationSucceeded, Status: metav1.ConditionFalse, Reason: "NoInstanceTypeMatches"}}), wantStatus: metav1.ConditionFalse, wantReason: "NoInstanceTypeMatches"},
		{name: "a failing node class wins over unknown validation", got: PoolReady([]metav1.Condition{bad,
			{Type: nsv1.ConditionValidationSucceeded, Status: metav1.ConditionUnknown, Reason: "AwaitingNodeClass"}}), wantStatus: metav1.ConditionFalse, wantReason: "NodeClassNotFound"},
		{name: "pool with a failing node class keeps its reason", got: PoolReady([]metav1.Condition{ok(nsv1.ConditionValidationSucceeded), bad}),
			wantStatus: metav1.ConditionFalse, wantReason: "NodeClassNotFound"},
		{name: "pool ready", got: PoolReady([]metav1.Condition{ok(nsv1.ConditionValidationSucceeded), ok(nsv1.ConditionNodeClassReady)}), wantStatus: metav1.ConditionTrue, wantReason: "Ready"},
		{name: "all ready", got: AllReady([]metav1.Condition{ok("A"), ok("B")}, "A", "B"), wantStatus: metav1.ConditionTrue, wantReason: "Ready"},
		{name: "all ready, one missing", got: AllReady([]metav1.Condition{ok("A")}, "A", "B"), wantStatus: metav1.ConditionFalse, wantReason: "NotB"},
		{name: "all ready, one failing", got: AllReady([]metav1.Condition{ok("A"), {Type: "B", Status: metav1.ConditionFalse, Reason: "NoSubnets"}}, "A", "B"),
			wantStatus: metav1.ConditionFalse, wantReason: "NoSubnets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got.Status != tt.wantStatus || tt.got.Reason != tt.wantReason {
				t.Fatalf("got %+v, want %s %s", tt.got, tt.wantStatus, tt.wantReason)
			}
		})
	}
}

func TestSetConditionKeepsTransitionTime(t *testing.T) {
	var conds []metav1.Condition
	first := metav1.NewTime(t0)
	later := metav1.NewTime(t0.Add(time.Hour))
	if !SetCondition(&conds, Condition("Launched", true, "", ""), 1, first) {
		t.Fatal("first set reported no change")
	}
	if SetCondition(&conds, Condition("Launched", true, "", ""), 1, later) {
		t.Fatal("setting the same condition reported a change")
	}
	if !conds[0].LastTransitionTime.Equal(&first) {
		t.Fatalf("transition time moved to %v although the status did not change", conds[0].LastTransitionTime)
	}
	if !SetCondition(&conds, Condition("Launched", false, "Boom", "x"), 2, later) || !conds[0].LastTransitionTime.Equal(&later) || conds[0].ObservedGeneration != 2 {
		t.Fatalf("status change not recorded: %+v", conds[0])
	}
}

func TestMergeConditions(t *testing.T) {
	t1 := t0.Add(time.Minute)
	tr := func(ty string, at time.Time) metav1.Condition { return cond(ty, metav1.ConditionTrue, at, "") }
	fa := func(ty string, at time.Time, msg string) metav1.Condition {
		return cond(ty, metav1.ConditionFalse, at, msg)
	}
	launched, registered, disrupting := nsv1.ConditionLaunched, nsv1.ConditionRegistered, nsv1.ConditionDisrupting
	list := func(c ...metav1.Condition) []metav1.Condition { return c }
	tests := []struct {
		name            string
		base, want, cur []metav1.Condition
		out             []metav1.Condition
	}{
		{name: "nothing changed, nothing concurrent",
			base: list(tr(launched, t0)), want: list(tr(launched, t0)), cur: list(tr(launched, t0)),
			out: list(tr(launched, t0))},
		{name: "added type joins a condition another writer set meanwhile",
			base: nil, want: list(tr(launched, t1)), cur: list(tr(disrupting, t0)),
			out: list(tr(disrupting, t0), tr(launched, t1))},
		{name: "a condition the writer read but did not touch keeps the newer value",
			base: list(fa(disrupting, t0, "old")), want: list(fa(disrupting, t0, "old"), tr(registered, t1)),
			cur: list(tr(disrupting, t1)), out: list(tr(disrupting, t1), tr(registered, t1))},
		{name: "a condition the writer never saw survives",
			base: list(tr(launched, t0)), want: list(tr(launched, t0), tr(registered, t1)),
			cur: list(tr(launched, t0), tr(disrupting, t1)),
			out: list(tr(launched, t0), tr(disrupting, t1), tr(registered, t1))},
		{name: "changed type overwrites in place",
			base: list(fa(launched, t0, "throttled"), tr(disrupting, t0)), want: list(tr(launched, t1), tr(disrupting, t0)),
			cur: list(fa(launched, t0, "throttled"), tr(disrupting, t0)),
			out: list(tr(launched, t1), tr(disrupting, t0))},
		{name: "same status keeps the server's transition time",
			base: list(fa(launched, t0, "a")), want: list(fa(launched, t1, "b")), cur: list(fa(launched, t0, "c")),
			out: list(fa(launched, t0, "b"))},
		{name: "removed type is removed, others stay",
			base: list(tr(launched, t0), tr(disrupting, t0)), want: list(tr(launched, t0)),
			cur: list(tr(launched, t0), tr(disrupting, t0), tr(registered, t1)),
			out: list(tr(launched, t0), tr(registered, t1))},
		{name: "removing what is already gone is a no-op",
			base: list(tr(disrupting, t0)), want: nil, cur: list(tr(launched, t1)), out: list(tr(launched, t1))},
		{name: "all removed is nil", base: list(tr(disrupting, t0)), want: nil, cur: list(tr(disrupting, t0)), out: nil},
		{name: "instants compare equal across locations",
			base: list(tr(launched, t0)), want: list(tr(launched, t0.In(time.FixedZone("x", 3600)))),
			cur: list(fa(launched, t1, "someone else")), out: list(fa(launched, t1, "someone else"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			curBefore := append([]metav1.Condition(nil), tt.cur...)
			got := MergeConditions(tt.base, tt.want, tt.cur)
			if len(got) != len(tt.out) || (tt.out == nil) != (got == nil) {
				t.Fatalf("got %+v, want %+v", got, tt.out)
			}
			for i := range got {
				if !sameCondition(got[i], tt.out[i]) {
					t.Fatalf("[%d] got %+v, want %+v", i, got[i], tt.out[i])
				}
			}
			for i := range curBefore {
				if !sameCondition(curBefore[i], tt.cur[i]) {
					t.Fatalf("cur was modified: %+v", tt.cur)
				}
			}
		})
	}
}

func TestCloudAccountReady(t *testing.T) {
	claim := func(name string, status metav1.ConditionStatus, reason, msg string) *nsv1.NodeClaim {
		c := &nsv1.NodeClaim{}
		c.Name = name
		c.Status.Conditions = []metav1.Condition{{Type: nsv1.ConditionLaunched, Status: status, Reason: reason, Message: msg}}
		return c
	}
	deleting := claim("a-deleting", metav1.ConditionFalse, nsv1.ReasonSpotServiceLinkedRoleMissing, "old")
	deleting.DeletionTimestamp = &metav1.Time{}
	for _, tc := range []struct {
		name       string
		claims     []*nsv1.NodeClaim
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "no claims", wantStatus: metav1.ConditionTrue, wantReason: nsv1.ConditionCloudAccountReady},
		{name: "other launch failures are not the account's", claims: []*nsv1.NodeClaim{claim("a", metav1.ConditionFalse, "LaunchFailed", "quota")},
			wantStatus: metav1.ConditionTrue, wantReason: nsv1.ConditionCloudAccountReady},
		{name: "the first failing claim by name speaks", claims: []*nsv1.NodeClaim{
			claim("b", metav1.ConditionFalse, nsv1.ReasonSpotServiceLinkedRoleMissing, "create the role (b)"),
			claim("a", metav1.ConditionFalse, nsv1.ReasonSpotServiceLinkedRoleMissing, "create the role (a)"),
			claim("c", metav1.ConditionTrue, nsv1.ConditionLaunched, ""),
			deleting,
		}, wantStatus: metav1.ConditionFalse, wantReason: nsv1.ReasonSpotServiceLinkedRoleMissing, wantMsg: "nodeclaim a: create the role (a)"},
		{name: "a deleting claim no longer counts", claims: []*nsv1.NodeClaim{deleting}, wantStatus: metav1.ConditionTrue, wantReason: nsv1.ConditionCloudAccountReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CloudAccountReady(tc.claims)
			if got.Type != nsv1.ConditionCloudAccountReady || got.Status != tc.wantStatus || got.Reason != tc.wantReason || got.Message != tc.wantMsg {
				t.Errorf("CloudAccountReady = %+v, want %s %s %q", got, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
		})
	}
}
