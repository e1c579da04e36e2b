package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// observer watches NodeClaims, Nodes and one namespace's Pods through the
// API server and keeps when each change was first seen, in the test's
// clock: the lab's own account of the order of things, not the
// controller's. Watch delivery adds a few milliseconds to every time.
type observer struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// Per NodeClaim name.
	claimAdded, claimInitialized, claimDisrupting, claimDeleting, claimGone map[string]time.Time
	claims                                                                  map[string]*nsv1.NodeClaim
	// marked is each claim as first seen with a disruption deadline: the
	// spot warning's mark, before later writes (the controller's own
	// termination of the instance comes back as a state-change notice that
	// moves the deadline to then).
	marked map[string]*nsv1.NodeClaim
	// nodeTainted: the disrupted taint first seen, per Node name.
	nodeTainted map[string]time.Time
	// podDeleting: a deletion timestamp first seen, per pod name; podNode
	// is where each pod was bound.
	podDeleting map[string]time.Time
	podNode     map[string]string
}

func newObserver(t *testing.T, podNamespace string) *observer {
	t.Helper()
	wc, err := client.NewWithWatch(lab.Env.Config, client.Options{Scheme: lab.Env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(context.Background())
	o := &observer{cancel: cancel,
		claimAdded: map[string]time.Time{}, claimInitialized: map[string]time.Time{}, claimDisrupting: map[string]time.Time{},
		claimDeleting: map[string]time.Time{}, claimGone: map[string]time.Time{}, claims: map[string]*nsv1.NodeClaim{},
		marked:      map[string]*nsv1.NodeClaim{},
		nodeTainted: map[string]time.Time{}, podDeleting: map[string]time.Time{}, podNode: map[string]string{}}
	o.watch(c, wc, &nsv1.NodeClaimList{}, o.claim)
	o.watch(c, wc, &corev1.NodeList{}, o.node)
	o.watch(c, wc, &corev1.PodList{}, o.pod, client.InNamespace(podNamespace))
	t.Cleanup(o.stop)
	return o
}

func (o *observer) stop() {
	o.cancel()
	o.wg.Wait()
}

// watch keeps a watch open until c ends, starting again when the server
// closes it (the first events of every watch list what exists).
func (o *observer) watch(c context.Context, wc client.WithWatch, list client.ObjectList, fn func(watch.EventType, client.Object, time.Time), opts ...client.ListOption) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for c.Err() == nil {
			w, err := wc.Watch(c, list.DeepCopyObject().(client.ObjectList), opts...)
			if err != nil {
				select {
				case <-c.Done():
				case <-time.After(200 * time.Millisecond):
				}
				continue
			}
			for ev := range w.ResultChan() {
				if obj, ok := ev.Object.(client.Object); ok && ev.Type != watch.Error && ev.Type != watch.Bookmark {
					fn(ev.Type, obj, time.Now())
				}
			}
			w.Stop()
		}
	}()
}

func first(m map[string]time.Time, k string, at time.Time) {
	if _, ok := m[k]; !ok {
		m[k] = at
	}
}

func (o *observer) claim(typ watch.EventType, obj client.Object, at time.Time) {
	c := obj.(*nsv1.NodeClaim)
	o.mu.Lock()
	defer o.mu.Unlock()
	first(o.claimAdded, c.Name, at)
	if typ == watch.Deleted {
		first(o.claimGone, c.Name, at)
		return
	}
	o.claims[c.Name] = c.DeepCopy()
	if cond := meta.FindStatusCondition(c.Status.Conditions, nsv1.ConditionInitialized); cond != nil && cond.Status == "True" {
		first(o.claimInitialized, c.Name, at)
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, nsv1.ConditionDisrupting); cond != nil && cond.Status == "True" {
		first(o.claimDisrupting, c.Name, at)
	}
	if o.marked[c.Name] == nil && c.Annotations[nsv1.AnnotationDisruptionDeadline] != "" {
		o.marked[c.Name] = c.DeepCopy()
	}
	if !c.DeletionTimestamp.IsZero() {
		first(o.claimDeleting, c.Name, at)
	}
}

func (o *observer) node(_ watch.EventType, obj client.Object, at time.Time) {
	n := obj.(*corev1.Node)
	for _, t := range n.Spec.Taints {
		if t.MatchTaint(&nsv1.DisruptedTaint) {
			o.mu.Lock()
			first(o.nodeTainted, n.Name, at)
			o.mu.Unlock()
		}
	}
}

func (o *observer) pod(_ watch.EventType, obj client.Object, at time.Time) {
	p := obj.(*corev1.Pod)
	o.mu.Lock()
	defer o.mu.Unlock()
	if p.Spec.NodeName != "" {
		o.podNode[p.Name] = p.Spec.NodeName
	}
	if !p.DeletionTimestamp.IsZero() {
		first(o.podDeleting, p.Name, at)
	}
}

// at returns a recorded time.
func (o *observer) at(m map[string]time.Time, k string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := m[k]
	return t, ok
}

// claimCopy is the last seen state of a claim.
func (o *observer) claimCopy(name string) *nsv1.NodeClaim {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c := o.claims[name]; c != nil {
		return c.DeepCopy()
	}
	return nil
}

// markedCopy is a claim as first seen with a disruption deadline.
func (o *observer) markedCopy(name string) *nsv1.NodeClaim {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c := o.marked[name]; c != nil {
		return c.DeepCopy()
	}
	return nil
}

// addedAfter are the claims first seen after t that are not in existing.
func (o *observer) addedAfter(t time.Time, existing map[string]bool) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for n, at := range o.claimAdded {
		if !existing[n] && at.After(t) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// firstEviction is the first deletion seen among the pods bound to node.
func (o *observer) firstEviction(node string) (time.Time, string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var best time.Time
	var pod string
	for p, at := range o.podDeleting {
		if o.podNode[p] == node && (best.IsZero() || at.Before(best)) {
			best, pod = at, p
		}
	}
	return best, pod, !best.IsZero()
}

// labEvent is one events.k8s.io Event the controller recorded, with its
// time (microseconds, set when the controller recorded it).
type labEvent struct {
	At     time.Time
	Kind   string
	Name   string
	Reason string
	Note   string
}

// eventsAbout lists the Events about the named objects with the given reasons, oldest first.
func eventsAbout(t *testing.T, names map[string]bool, reasons ...string) []labEvent {
	t.Helper()
	var list eventsv1.EventList
	if err := kube().List(ctx(), &list); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, r := range reasons {
		want[r] = true
	}
	var out []labEvent
	for _, e := range list.Items {
		if !names[e.Regarding.Name] || !want[e.Reason] {
			continue
		}
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.DeprecatedFirstTimestamp.Time
		}
		out = append(out, labEvent{At: at, Kind: e.Regarding.Kind, Name: e.Regarding.Name, Reason: e.Reason, Note: e.Note})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// plannedTargets reads where a ReplacementPlanned Event says the pods go
// ("... (5 to move): 3 on interruption-spot-x7k2p, 2 on i-0abc").
func plannedTargets(note string) map[string]int {
	out := map[string]int{}
	_, list, ok := strings.Cut(note, "): ")
	if !ok {
		return out
	}
	for _, part := range strings.Split(list, ", ") {
		var n int
		var target string
		if _, err := fmt.Sscanf(part, "%d on %s", &n, &target); err == nil {
			out[target] += n
		}
	}
	return out
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// httpGet returns a page's body.
func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}

// controllerMetrics reads the controller's /metrics.
type controllerMetrics map[string]*dto.MetricFamily

func scrape(t *testing.T, addr string) controllerMetrics {
	t.Helper()
	body, err := httpGet("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scraping the controller's metrics: %v", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing the controller's metrics: %v", err)
	}
	return fams
}

// sum adds up a counter's series whose labels include match.
func (m controllerMetrics) sum(name string, match map[string]string) float64 {
	f := m[name]
	if f == nil {
		return 0
	}
	total := 0.0
	for _, s := range f.Metric {
		if labelsMatch(s.Label, match) {
			total += s.GetCounter().GetValue()
		}
	}
	return total
}

// byLabel splits a counter by one label.
func (m controllerMetrics) byLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	if f := m[name]; f != nil {
		for _, s := range f.Metric {
			for _, l := range s.Label {
				if l.GetName() == label {
					out[l.GetValue()] += s.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// histogram is a histogram's count, sum and the upper bound of the bucket
// holding its largest observation.
func (m controllerMetrics) histogram(name string) (count uint64, sum, maxBound float64) {
	f := m[name]
	if f == nil || len(f.Metric) == 0 {
		return 0, 0, 0
	}
	h := f.Metric[0].GetHistogram()
	count, sum = h.GetSampleCount(), h.GetSampleSum()
	for _, b := range h.Bucket {
		if b.GetCumulativeCount() >= count {
			return count, sum, b.GetUpperBound()
		}
	}
	return count, sum, 0
}

func labelsMatch(ls []*dto.LabelPair, match map[string]string) bool {
	for k, v := range match {
		found := false
		for _, l := range ls {
			if l.GetName() == k && l.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
