package events

import (
	"fmt"
	"testing"
	"time"

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
