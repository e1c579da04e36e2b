package disruption

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// stampVersions gives every object of w a UID and resourceVersion, as the
// API server would, so its plans can be reused.
func stampVersions(w *world) {
	stamp := func(m *metav1.ObjectMeta) {
		if m.UID == "" {
			m.UID = types.UID(m.Name)
		}
		if m.ResourceVersion == "" {
			m.ResourceVersion = "1"
		}
	}
	for _, o := range w.snap.Pods {
		stamp(&o.ObjectMeta)
	}
	for _, o := range w.snap.Nodes {
		stamp(&o.ObjectMeta)
	}
	for _, o := range w.snap.NodeClaims {
		stamp(&o.ObjectMeta)
	}
	for _, o := range w.snap.NodePools {
		stamp(&o.ObjectMeta)
	}
	for _, o := range w.snap.DaemonSets {
		stamp(&o.ObjectMeta)
	}
	for _, o := range w.snap.PDBs {
		stamp(&o.ObjectMeta)
	}
	for _, o := range w.classes {
		stamp(&o.ObjectMeta)
	}
}

// digest is everything a caller reads of a plan, as text.
func digest(p *Plan) string {
	var b strings.Builder
	for _, a := range p.Actions {
		fmt.Fprintf(&b, "action %s/%s %s savings=%.6f pods=%d\n", a.Method, a.Reason, a.Message, a.Savings, len(a.Pods))
		for _, c := range a.Candidates {
			fmt.Fprintf(&b, "  candidate %s %s %s %s %.6f %q\n", c.Claim.Name, c.InstanceType, c.Zone, c.CapacityType, c.Price, c.Why)
		}
		for _, r := range a.Replacements {
			fmt.Fprintf(&b, "  replacement %s %d pods %d options\n", r.NodePool, len(r.Pods), len(r.Options))
		}
	}
	for _, s := range p.Skipped {
		fmt.Fprintf(&b, "skip %+v\n", s)
	}
	var reasons []string
	for r, n := range p.Candidates {
		reasons = append(reasons, fmt.Sprintf("%s=%d", r, n))
	}
	sort.Strings(reasons)
	fmt.Fprintf(&b, "candidates %v allowed %v solves %d\n", reasons, p.Allowed, p.Solves)
	return b.String()
}

// TestReusedPlansAreThePlan: over random clusters whose nodes reach their
// consolidateAfter, expiry, do-not-disrupt end and replacement settle
// within minutes, a poll every 20 s for seven minutes hands back the
// previous plan only when planning afresh gives the same plan — whatever
// instant the poll falls on, also the last instant before ValidUntil.
func TestReusedPlansAreThePlan(t *testing.T) {
	const runs = 300
	reused, horizons := 0, 0
	for seed := int64(0); seed < runs; seed++ {
		r := rand.New(rand.NewSource(seed))
		w := randomWorld(r)
		at := now.Add(time.Duration(r.Intn(24*60)) * time.Minute)
		for _, c := range w.snap.NodeClaims {
			switch r.Intn(4) {
			case 0: // consolidateAfter (0s, 5m or 1h) comes within the polls
				c.Status.LastPodEventTime = metav1.NewTime(at.Add(-time.Duration(r.Intn(600)) * time.Second))
			case 1: // expires within the polls
				c.CreationTimestamp = metav1.NewTime(at.Add(-2 * time.Hour))
				c.Spec.ExpireAfter = nsv1.MustParseNillableDuration((2*time.Hour + time.Duration(r.Intn(400))*time.Second).String())
			case 2: // a replacement settling
				c.Annotations[nsv1.AnnotationReplacementFor] = "d-gone"
				c.CreationTimestamp = metav1.NewTime(at.Add(-10*time.Minute + time.Duration(r.Intn(400))*time.Second))
			}
		}
		for _, p := range w.snap.Pods {
			if r.Intn(6) == 0 {
				start := metav1.NewTime(at.Add(-time.Duration(r.Intn(300)) * time.Second))
				p.Status.StartTime = &start
				podAnnotation(nsv1.AnnotationDoNotDisrupt, "5m")(p)
			}
		}
		stampVersions(w)
		spot := r.Intn(2) == 0
		input := func(t time.Time, prev *Plan) Input {
			return w.input(func(in *Input) {
				in.Now = t
				in.Options.SpotToSpotConsolidation = spot
				in.Previous = prev
			})
		}
		var prev *Plan
		for step := 0; step <= 21; step++ {
			ts := at.Add(time.Duration(step) * 20 * time.Second)
			if prev != nil && !prev.ValidUntil.IsZero() && r.Intn(3) == 0 {
				ts = prev.ValidUntil.Add(-time.Nanosecond) // the last instant it may be reused
			}
			got, err := Compute(input(ts, prev))
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			fresh, err := Compute(input(ts, nil))
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if fresh.Reused {
				t.Fatalf("seed %d: a plan without a previous one is marked reused", seed)
			}
			if g, f := digest(got), digest(fresh); g != f {
				t.Fatalf("seed %d at +%s (reused %v, previous valid until +%s): the plan differs from a fresh one\nreused:\n%s\nfresh:\n%s",
					seed, ts.Sub(at), got.Reused, prev.ValidUntil.Sub(at), g, f)
			}
			if got.Reused {
				reused++
			} else if prev != nil && ts.Before(prev.ValidUntil) {
				t.Fatalf("seed %d at +%s: nothing changed and the previous plan was valid until +%s, yet it was not reused", seed, ts.Sub(at), prev.ValidUntil.Sub(at))
			}
			if fresh.ValidUntil.Before(ts.Add(maxReuse)) {
				horizons++
			}
			prev = got
		}
	}
	if reused < runs || horizons < runs {
		t.Fatalf("%d plans reused and %d horizons short of %s over %d clusters: the test does not exercise reuse", reused, horizons, maxReuse, runs)
	}
	t.Logf("%d plans reused, %d horizons before %s, over %d clusters", reused, horizons, maxReuse, runs)
}
