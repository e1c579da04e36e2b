package events

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestPublishDeduplicates(t *testing.T) {
	pod := func(uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: apitypes.UID("uid-" + uid)}}
	}
	tests := []struct {
		name  string
		steps []func(r *Recorder, clk *clocktesting.FakeClock)
		want  int
	}{
		{name: "one event", want: 1, steps: []func(*Recorder, *clocktesting.FakeClock){
			func(r *Recorder, _ *clocktesting.FakeClock) { r.Publish(PodUnschedulable(pod("a"), "no pool")) },
		}},
		{name: "a repeat within the window is dropped", want: 1, steps: []func(*Recorder, *clocktesting.FakeClock){
			func(r *Recorder, _ *clocktesting.FakeClock) { r.Publish(PodUnschedulable(pod("a"), "no pool")) },
			func(r *Recorder, clk *clocktesting.FakeClock) {
				clk.Step(time.Minute)
				r.Publish(PodUnschedulable(pod("a"), "no pool"))
			},
		}},
		{name: "a repeat after the window is sent", want: 2, steps: []func(*Recorder, *clocktesting.FakeClock){
			func(r *Recorder, _ *clocktesting.FakeClock) { r.Publish(PodUnschedulable(pod("a"), "no pool")) },
			func(r *Recorder, clk *clocktesting.FakeClock) {
				clk.Step(5 * time.Minute)
				r.Publish(PodUnschedulable(pod("a"), "no pool"))
			},
		}},
		{name: "another message or object is not a repeat", want: 3, steps: []func(*Recorder, *clocktesting.FakeClock){
			func(r *Recorder, _ *clocktesting.FakeClock) {
				r.Publish(PodUnschedulable(pod("a"), "no pool"), PodUnschedulable(pod("a"), "limits"), PodUnschedulable(pod("b"), "no pool"))
			},
		}},
		{name: "nominations of a burst: the first 10 are sent, the rest dropped", want: 10, steps: []func(*Recorder, *clocktesting.FakeClock){
			func(r *Recorder, _ *clocktesting.FakeClock) {
				for i := range 1000 {
					r.Publish(PodNominated(pod(fmt.Sprint(i)), "claim-a"))
				}
			},
		}},
		{name: "nominations refill at 5 a second on the recorder's clock", want: 15, steps: []func(*Recorder, *clocktesting.FakeClock){
			func(r *Recorder, clk *clocktesting.FakeClock) {
				for i := range 100 {
					r.Publish(PodNominated(pod(fmt.Sprint(i)), "claim-a"))
				}
				clk.Step(time.Second)
				for i := range 100 {
					r.Publish(PodNominated(pod(fmt.Sprint(100+i)), "claim-a"))
				}
			},
		}},
		{name: "the nomination rate does not hold back other reasons", want: 10 + 50, steps: []func(*Recorder, *clocktesting.FakeClock){
			func(r *Recorder, _ *clocktesting.FakeClock) {
				for i := range 50 {
					r.Publish(PodNominated(pod(fmt.Sprint(i)), "claim-a"), PodUnschedulable(pod(fmt.Sprint(i)), "no pool"))
				}
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := events.NewFakeRecorder(2000)
			clk := clocktesting.NewFakeClock(time.Now())
			r := NewRecorder(fake, clk, 5*time.Minute)
			for _, s := range tt.steps {
				s(r, clk)
			}
			if got := len(fake.Events); got != tt.want {
				t.Fatalf("%d events sent, want %d", got, tt.want)
			}
		})
	}
}

// TestSeenCacheExpiry: an entry re-emitted after its window keeps its newer
// time when the older queue entry expires, and the cache forgets what left
// the window and never holds more than maxSeen keys.
func TestSeenCacheExpiry(t *testing.T) {
	pod := func(uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: apitypes.UID("uid-" + uid)}}
	}
	fake := events.NewFakeRecorder(10)
	clk := clocktesting.NewFakeClock(time.Now())
	r := NewRecorder(fake, clk, 5*time.Minute)
	r.Publish(PodUnschedulable(pod("a"), "no pool")) // sent
	clk.Step(5 * time.Minute)
	r.Publish(PodUnschedulable(pod("a"), "no pool")) // window over: sent
	clk.Step(time.Minute)
	r.Publish(PodUnschedulable(pod("b"), "no pool")) // sent; expires a's first entry
	r.Publish(PodUnschedulable(pod("a"), "no pool")) // within a's second window: dropped
	if got := len(fake.Events); got != 3 {
		t.Fatalf("%d events sent, want 3 (a, a again after its window, b)", got)
	}
	if got := r.seen.len(); got != 2 {
		t.Fatalf("%d keys remembered, want 2", got)
	}

	// Past the bound the oldest go, though still in their window.
	quiet := NewRecorder(&events.FakeRecorder{}, clk, time.Hour)
	for i := range maxSeen + 5000 {
		quiet.Publish(Normal(pod(fmt.Sprint(i)), "Test", "Test", "m"))
	}
	if got := quiet.seen.len(); got != maxSeen {
		t.Fatalf("%d keys remembered after %d distinct events, want the bound %d", got, maxSeen+5000, maxSeen)
	}
	if got := len(quiet.seen.queue) - quiet.seen.head; got != maxSeen {
		t.Fatalf("%d queue entries live, want %d", got, maxSeen)
	}
	// Once the window has passed, one publish forgets them all.
	clk.Step(time.Hour)
	quiet.Publish(Normal(pod("last"), "Test", "Test", "m"))
	if got := quiet.seen.len(); got != 1 {
		t.Fatalf("%d keys remembered an hour later, want 1", got)
	}
	if cap(quiet.seen.queue) > 2*maxSeen+2048 {
		t.Fatalf("queue capacity %d after expiry: the popped prefix is not reclaimed", cap(quiet.seen.queue))
	}
}

// BenchmarkPublish publishes distinct events into a recorder that already
// remembers live events within its window: the cost per publish must not
// grow with live (it scanned every entry per publish past 10,000 before).
func BenchmarkPublish(b *testing.B) {
	for _, live := range []int{1_000, 10_000, 100_000, 400_000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			pods := make([]*corev1.Pod, live+b.N)
			for i := range pods {
				pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), UID: apitypes.UID(fmt.Sprint("uid-", i))}}
			}
			clk := clocktesting.NewFakeClock(time.Now())
			r := NewRecorder(&events.FakeRecorder{}, clk, 5*time.Minute)
			for i := range live {
				r.Publish(PodUnschedulable(pods[i], "no pool"))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r.Publish(PodUnschedulable(pods[live+i], "no pool"))
			}
		})
	}
}

// The solver's reason names the pod; the Event is already about it.
func TestPodUnschedulableSaysThePodOnce(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}}
	for reason, want := range map[string]string{
		`cannot place pod shop/web-1: pool "general": limit cpu: 16 would be exceeded`: `cannot place pod: pool "general": limit cpu: 16 would be exceeded`,
		"no NodePool tolerates it":       "cannot place pod: no NodePool tolerates it",
		"cannot place pod shop/web-2: x": "cannot place pod: cannot place pod shop/web-2: x",
	} {
		if got := PodUnschedulable(pod, reason).Message; got != want {
			t.Errorf("PodUnschedulable(%q) = %q, want %q", reason, got, want)
		}
	}
}

// An event's note longer than kube-apiserver's 1,024-byte limit is cut, on
// a character boundary, instead of the whole event being rejected (a
// CreateFleet error naming every override was).
func TestPublishClipsLongMessages(t *testing.T) {
	long := strings.Repeat("é", 600) // 1,200 bytes
	for _, msg := range []string{"short", strings.Repeat("x", MaxMessage), strings.Repeat("x", MaxMessage+1), long} {
		fr := events.NewFakeRecorder(1)
		r := NewRecorder(fr, clocktesting.NewFakeClock(time.Now()), time.Minute)
		r.Publish(Warning(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u"}}, "LaunchFailed", "Launch", msg))
		got := <-fr.Events
		note := strings.TrimPrefix(got, "Warning LaunchFailed ")
		if len(note) > MaxMessage || !utf8.ValidString(note) {
			t.Errorf("note of %d bytes (valid UTF-8 %v) from a %d-byte message", len(note), utf8.ValidString(note), len(msg))
		}
		if len(msg) <= MaxMessage && note != msg {
			t.Errorf("a %d-byte message was changed", len(msg))
		}
		if len(msg) > MaxMessage && (!strings.HasSuffix(note, "…") || !strings.HasPrefix(msg, strings.TrimSuffix(note, "…"))) {
			t.Errorf("a %d-byte message cut to %q…, not its own start and an ellipsis", len(msg), note[:20])
		}
	}
}

// The provider's launch decisions become Events on the claim: a Warning
// for the reasons the provider says cost money, Normal for the rest.
func TestProviderNotices(t *testing.T) {
	fr := events.NewFakeRecorder(4)
	notices := ProviderNotices(NewRecorder(fr, clocktesting.NewFakeClock(time.Now()), time.Minute), func(r string) bool { return r == "OnDemandFallback" })
	claim := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "u"}}
	notices(claim, "CapacityFallback", "no spot capacity in us-east-1a")
	notices(claim, "OnDemandFallback", "launching on-demand")
	for _, want := range []string{"Normal CapacityFallback no spot capacity in us-east-1a", "Warning OnDemandFallback launching on-demand"} {
		if got := <-fr.Events; got != want {
			t.Errorf("event %q, want %q", got, want)
		}
	}
}
