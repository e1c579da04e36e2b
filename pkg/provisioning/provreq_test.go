package provisioning

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

func request(class string, sets ...prv1.PodSet) *prv1.ProvisioningRequest {
	return &prv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gang"},
		Spec: prv1.ProvisioningRequestSpec{ProvisioningClassName: class, PodSets: sets}}
}

func set(tmpl string, n int32) prv1.PodSet {
	return prv1.PodSet{PodTemplateRef: prv1.Reference{Name: tmpl}, Count: n}
}

func TestAcceptRequest(t *testing.T) {
	withParams := request(prv1.ClassAtomicScaleUp, set("t", 1))
	withParams.Spec.Parameters = map[string]prv1.Parameter{"ValidUntilSeconds": "60"}
	tests := []struct {
		name    string
		pr      *prv1.ProvisioningRequest
		serve   bool
		wantMsg string
	}{
		{name: "check-capacity", pr: request(prv1.ClassCheckCapacity, set("t", 1)), serve: true, wantMsg: prv1.ClassCheckCapacity},
		{name: "atomic scale-up", pr: request(prv1.ClassAtomicScaleUp, set("t", 1)), serve: true, wantMsg: prv1.ClassAtomicScaleUp},
		{name: "parameters are said to be unread", pr: withParams, serve: true, wantMsg: "parameters ValidUntilSeconds are not read"},
		{name: "another class is left alone", pr: request("queued-provisioning.gke.io", set("t", 1)), serve: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, serve := AcceptRequest(tt.pr)
			if serve != tt.serve {
				t.Fatalf("serve %v, want %v", serve, tt.serve)
			}
			if serve && (c.Type != prv1.ConditionAccepted || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, tt.wantMsg)) {
				t.Errorf("accepted %+v, want True with %q", c, tt.wantMsg)
			}
		})
	}
}

func TestRequestPods(t *testing.T) {
	tmpls := map[string]*corev1.PodTemplateSpec{"small": chunk("500m"), "big": chunk("2")}
	pods, problem := RequestPods(request(prv1.ClassAtomicScaleUp, set("small", 3), set("big", 2)), tmpls)
	if problem != "" || len(pods) != 5 {
		t.Fatalf("%d pods, problem %q; want 5", len(pods), problem)
	}
	uids := map[string]bool{}
	for _, p := range pods {
		if p.Namespace != "ns" || p.Annotations[AnnotationRequestPod] != "ns/gang" || p.Labels["app"] != "web" {
			t.Errorf("pod %s/%s annotations %v labels %v", p.Namespace, p.Name, p.Annotations, p.Labels)
		}
		uids[string(p.UID)] = true
	}
	if len(uids) != 5 {
		t.Errorf("%d distinct uids, want 5", len(uids))
	}
	if cpu := pods[4].Spec.Containers[0].Resources.Requests.Cpu().String(); cpu != "2" {
		t.Errorf("last pod (second set) requests %s cpu, want 2", cpu)
	}
	if tmpls["small"].Annotations != nil {
		t.Error("RequestPods changed the template")
	}
	if pods, problem := RequestPods(request(prv1.ClassAtomicScaleUp, set("small", 1), set("gone", 1)), tmpls); pods != nil || !strings.Contains(problem, "ns/gone") {
		t.Errorf("missing template: %d pods, problem %q", len(pods), problem)
	}
}

func reqPods(t *testing.T, cpu string, n int32) []*corev1.Pod {
	t.Helper()
	pods, problem := RequestPods(request(prv1.ClassAtomicScaleUp, set("t", n)), map[string]*corev1.PodTemplateSpec{"t": chunk(cpu)})
	if problem != "" {
		t.Fatal(problem)
	}
	return pods
}

func readyNode(name, cpu string, inFlight bool, pods ...*corev1.Pod) *scheduling.ExistingNode {
	return &scheduling.ExistingNode{Name: name, Labels: map[string]string{corev1.LabelHostname: name}, InFlight: inFlight, Pods: pods,
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}}
}

func TestCheckCapacity(t *testing.T) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := pool("dyn")
	p.Spec.Template.Spec.Requirements = staticPoolReqs()
	dyn := scheduling.NodePoolFromAPI(p, cat.Types())
	used := cpuPod(boundPod("u", "n1"), "1")
	tests := []struct {
		name      string
		nodes     []*scheduling.ExistingNode
		pods      []*corev1.Pod
		want      metav1.ConditionStatus
		wantRetry bool
		wantMsg   string
	}{
		{name: "all fit on two ready nodes", nodes: []*scheduling.ExistingNode{readyNode("n1", "2", false), readyNode("n2", "2", false)},
			pods: reqPods(t, "1", 4), want: metav1.ConditionTrue, wantMsg: "all 4 pods fit"},
		{name: "pods already there take their room", nodes: []*scheduling.ExistingNode{readyNode("n1", "2", false, used), readyNode("n2", "2", false)},
			pods: reqPods(t, "1", 4), want: metav1.ConditionFalse, wantRetry: true, wantMsg: "1 of 4 pods do not fit"},
		{name: "an in-flight claim is not room yet", nodes: []*scheduling.ExistingNode{readyNode("n1", "2", false), readyNode("c1", "2", true)},
			pods: reqPods(t, "1", 4), want: metav1.ConditionFalse, wantRetry: true, wantMsg: "2 of 4 pods"},
		{name: "no nodes: nothing fits, and nothing is launched for it", pods: reqPods(t, "1", 1), want: metav1.ConditionFalse, wantRetry: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := CheckCapacity(scheduling.Input{Nodes: tt.nodes, NodePools: []*scheduling.NodePool{dyn}}, tt.pods)
			if err != nil {
				t.Fatal(err)
			}
			if v.Provisioned.Type != prv1.ConditionProvisioned || v.Provisioned.Status != tt.want || !strings.Contains(v.Provisioned.Message, tt.wantMsg) {
				t.Errorf("provisioned %+v, want %s %q", v.Provisioned, tt.want, tt.wantMsg)
			}
			if v.Failed != nil {
				t.Errorf("failed %+v: pods that do not fit are tried again, never failed", v.Failed)
			}
			if v.Retry != tt.wantRetry {
				t.Errorf("retry %v, want %v", v.Retry, tt.wantRetry)
			}
			if v.Retry && (v.Provisioned.Reason != ReasonNotFit || !strings.Contains(v.Provisioned.Message, "try again")) {
				t.Errorf("provisioned %+v, want reason %s saying it is tried again", v.Provisioned, ReasonNotFit)
			}
			if v.Plan != nil && len(v.Plan.NewClaims) > 0 {
				t.Error("check-capacity planned a launch")
			}
			if (v.Plan != nil) == tt.wantRetry {
				t.Errorf("plan %v, want one (the nodes to book) only when the pods fit", v.Plan)
			}
		})
	}
}

func TestPlanAtomic(t *testing.T) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := pool("dyn")
	p.Spec.Template.Spec.Requirements = staticPoolReqs() // m5.large (2 cpu), m5.xlarge (4 cpu)
	dyn := scheduling.NodePoolFromAPI(p, cat.Types())
	limited := func(nodes int64) *scheduling.NodePool {
		cp := *dyn
		cp.Limits = corev1.ResourceList{nsv1.ResourceNodes: *resource.NewQuantity(nodes, resource.DecimalSI)}
		return &cp
	}
	tests := []struct {
		name        string
		nodes       []*scheduling.ExistingNode
		pool        *scheduling.NodePool
		pods        []*corev1.Pod
		wantClaims  int
		wantNominal int
		wantRetry   bool
	}{
		{name: "all pods on new claims", pool: dyn, pods: reqPods(t, "3", 4), wantClaims: 4},
		{name: "existing room is used first", nodes: []*scheduling.ExistingNode{readyNode("n1", "4", false)}, pool: dyn, pods: reqPods(t, "3", 2), wantClaims: 1, wantNominal: 1},
		{name: "one pod too big for any type: none planned", pool: dyn, pods: append(reqPods(t, "1", 3), cpuPod(pendingPod("huge"), "64")), wantRetry: true},
		{name: "the pool's node limit leaves some pods out: none planned", pool: limited(2), pods: reqPods(t, "3", 4), wantRetry: true},
		{name: "the node limit fits them all", pool: limited(4), pods: reqPods(t, "3", 4), wantClaims: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := PlanAtomic(scheduling.Input{Nodes: tt.nodes, NodePools: []*scheduling.NodePool{tt.pool}}, tt.pods)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantRetry {
				if !v.Retry || v.Failed != nil || v.Plan != nil || v.Provisioned.Status != metav1.ConditionFalse ||
					v.Provisioned.Reason != ReasonNotFit || !strings.Contains(v.Provisioned.Message, "nothing launched") {
					t.Fatalf("verdict %+v plan %v, want not Provisioned (%s), tried again, with no plan", v, v.Plan, ReasonNotFit)
				}
				return
			}
			if v.Failed != nil || v.Retry || v.Plan == nil {
				t.Fatalf("failed %+v retry %v, want a plan", v.Failed, v.Retry)
			}
			if len(v.Plan.NewClaims) != tt.wantClaims || len(v.Plan.Nominations) != tt.wantNominal {
				t.Errorf("%d claims %d nominations, want %d and %d", len(v.Plan.NewClaims), len(v.Plan.Nominations), tt.wantClaims, tt.wantNominal)
			}
			if v.Provisioned.Status != metav1.ConditionFalse || v.Provisioned.Reason != ReasonLaunching {
				t.Errorf("provisioned %+v, want False %s until the claims launch", v.Provisioned, ReasonLaunching)
			}
		})
	}
}

func TestAtomicLaunch(t *testing.T) {
	launched := lifecycle.Condition(nsv1.ConditionLaunched, true, "", "")
	rejected := lifecycle.Condition(nsv1.ConditionLaunched, false, "LaunchFailed", "InvalidParameter")
	noAnswer := lifecycle.Condition(nsv1.ConditionLaunched, false, lifecycle.ReasonCloudUnavailable, "throttled")
	tests := []struct {
		name    string
		claims  []ClaimLaunch
		want    metav1.ConditionStatus
		failed  bool
		wantMsg string
	}{
		{name: "all launched", claims: []ClaimLaunch{{Name: "a", Launched: &launched}, {Name: "b", Launched: &launched}}, want: metav1.ConditionTrue, wantMsg: "all 2 nodeclaims launched"},
		{name: "one still launching", claims: []ClaimLaunch{{Name: "a", Launched: &launched}, {Name: "b"}}, want: metav1.ConditionFalse, wantMsg: "1 of 2"},
		{name: "no answer from the cloud is still launching", claims: []ClaimLaunch{{Name: "a", Launched: &launched}, {Name: "b", Launched: &noAnswer}}, want: metav1.ConditionFalse, wantMsg: "1 of 2"},
		{name: "one rejected fails the set", claims: []ClaimLaunch{{Name: "a", Launched: &launched}, {Name: "b", Launched: &rejected}}, want: metav1.ConditionFalse, failed: true, wantMsg: "nodeclaim b did not launch (LaunchFailed: InvalidParameter)"},
		{name: "one deleted (no capacity) fails the set", claims: []ClaimLaunch{{Name: "a", Launched: &launched}, {Name: "b", Gone: true}}, want: metav1.ConditionFalse, failed: true, wantMsg: "nodeclaim b went away"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := AtomicLaunch(tt.claims)
			if v.Provisioned.Status != tt.want || (v.Failed != nil) != tt.failed {
				t.Fatalf("provisioned %+v failed %+v, want %s failed %v", v.Provisioned, v.Failed, tt.want, tt.failed)
			}
			msg := v.Provisioned.Message
			if v.Failed != nil {
				msg = v.Failed.Message
				if v.Failed.Reason != ReasonLaunchFailed {
					t.Errorf("failed reason %s, want %s", v.Failed.Reason, ReasonLaunchFailed)
				}
			}
			if !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("message %q, want %q", msg, tt.wantMsg)
			}
		})
	}
}

func TestBookingExpired(t *testing.T) {
	since := now.Add(-BookingWindow)
	if !BookingExpired(since, now) || BookingExpired(since.Add(1), now) {
		t.Error("booking window: expired exactly at since+window, not a nanosecond before")
	}
}

func TestConsumed(t *testing.T) {
	pr := request(prv1.ClassAtomicScaleUp, set("t", 2), set("u", 1))
	pod := func(name, ns, consumes, node string) *corev1.Pod {
		p := boundPod(name, node)
		p.Namespace = ns
		p.Annotations = map[string]string{prv1.AnnotationConsumeRequest: consumes}
		return p
	}
	tests := []struct {
		name string
		pods []*corev1.Pod
		want bool
	}{
		{name: "all three bound", pods: []*corev1.Pod{pod("a", "ns", "gang", "n1"), pod("b", "ns", "gang", "n1"), pod("c", "ns", "gang", "n2")}, want: true},
		{name: "one still pending", pods: []*corev1.Pod{pod("a", "ns", "gang", "n1"), pod("b", "ns", "gang", "n1"), pod("c", "ns", "gang", "")}},
		{name: "another request's pods do not count", pods: []*corev1.Pod{pod("a", "ns", "gang", "n1"), pod("b", "ns", "gang", "n1"), pod("c", "ns", "other", "n2")}},
		{name: "another namespace's pods do not count", pods: []*corev1.Pod{pod("a", "ns", "gang", "n1"), pod("b", "ns", "gang", "n1"), pod("c", "elsewhere", "gang", "n2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Consumed(pr, tt.pods); got != tt.want {
				t.Errorf("Consumed = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWaitingForBooking(t *testing.T) {
	pod := func(ns, name, consumes string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if consumes != "" {
			p.Annotations = map[string]string{prv1.AnnotationConsumeRequest: consumes}
		}
		return p
	}
	live := map[string]bool{"lab/gang": true}
	booked := func(key string) bool { return live[key] }
	pods := []*corev1.Pod{
		pod("lab", "plain", ""),
		pod("lab", "gang-0", "gang"),       // its request's booking is live: waits
		pod("lab", "other-0", "expired"),   // no live booking: planned
		pod("elsewhere", "gang-0", "gang"), // same name, another namespace: planned
	}
	plan, waiting := WaitingForBooking(pods, booked)
	names := func(ps []*corev1.Pod) (out []string) {
		for _, p := range ps {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		return out
	}
	if got := strings.Join(names(waiting), ","); got != "lab/gang-0" {
		t.Errorf("waiting %q, want lab/gang-0", got)
	}
	if got := strings.Join(names(plan), ","); got != "lab/plain,lab/other-0,elsewhere/gang-0" {
		t.Errorf("planned %q", got)
	}
	if plan, waiting := WaitingForBooking(pods, nil); len(plan) != len(pods) || len(waiting) != 0 {
		t.Errorf("no booking lookup: %d planned, %d waiting; want every pod planned", len(plan), len(waiting))
	}
}

func TestRetryDelay(t *testing.T) {
	for _, tt := range []struct {
		tries int
		want  time.Duration
	}{{1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second}, {5, 160 * time.Second}, {6, 5 * time.Minute}, {40, 5 * time.Minute}} {
		if got := RetryDelay(tt.tries); got != tt.want {
			t.Errorf("RetryDelay(%d) = %s, want %s", tt.tries, got, tt.want)
		}
	}
}
