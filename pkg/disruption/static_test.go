package disruption

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func replicas(n int64) poolOpt {
	return func(p *nsv1.NodePool) { p.Spec.Replicas = &n }
}

func nodeLimit(n int64) poolOpt {
	return func(p *nsv1.NodePool) {
		p.Spec.Limits = nsv1.Limits{nsv1.ResourceNodes: *resource.NewQuantity(n, resource.DecimalSI)}
	}
}

// drifted changes a pool's template so its nodes drift.
func drifted(w *world, pool string) {
	w.pools[pool].Spec.Template.ObjectMeta.Labels = map[string]string{"team": "new"}
}

func skipOf(p *Plan, node string) Skip {
	for _, s := range p.Skipped {
		if s.Node == node {
			return s
		}
	}
	return Skip{}
}

func TestStaticPools(t *testing.T) {
	const od = nsv1.CapacityTypeOnDemand
	tests := []struct {
		name  string
		build func() (Input, []string)
		want  []string
		check func(t *testing.T, p *Plan, nodes []string)
	}{
		{
			name: "consolidation never removes a static pool's empty or underused nodes",
			build: func() (Input, []string) {
				w := newWorld(pool("s", replicas(2)))
				a := w.node("s", "large", "zone-a", od)
				b := w.node("s", "large", "zone-a", od)
				w.pod(b, "500m")
				return w.input(), []string{a, b}
			},
			check: func(t *testing.T, p *Plan, nodes []string) {
				for _, n := range nodes {
					if s := skipOf(p, n); s.Reason != SkipStaticNodePool {
						t.Errorf("node %s skipped %q (%s), want %s", n, s.Reason, s.Message, SkipStaticNodePool)
					}
				}
			},
		},
		{
			name: "a drifted static node is replaced by a node of its pool, which takes its pods",
			build: func() (Input, []string) {
				w := newWorld(pool("s", replicas(1)))
				a := w.node("s", "small", "zone-a", od)
				w.pod(a, "1")
				drifted(w, "s")
				return w.input(), []string{a}
			},
			want: []string{"Drift[s-01]+1"},
			check: func(t *testing.T, p *Plan, _ []string) {
				r := p.Actions[0].Replacements[0]
				if r.NodePool != "s" || len(r.Pods) != 0 || r.Options[0].InstanceType.Name != "small" {
					t.Errorf("replacement pool %s pods %d cheapest %s, want a static claim of s (small)", r.NodePool, len(r.Pods), r.Options[0].InstanceType.Name)
				}
				if p.Actions[0].Forced {
					t.Error("drift of a static node is forced; want replace-then-delete")
				}
			},
		},
		{
			name: "an empty drifted static node is replaced, not just deleted",
			build: func() (Input, []string) {
				w := newWorld(pool("s", replicas(1)))
				a := w.node("s", "small", "zone-a", od)
				drifted(w, "s")
				return w.input(), []string{a}
			},
			want: []string{"Drift[s-01]+1"},
		},
		{
			name: "drift replaces one static node at a time",
			build: func() (Input, []string) {
				w := newWorld(pool("s", replicas(3)))
				a := w.node("s", "small", "zone-a", od)
				b := w.node("s", "small", "zone-a", od)
				c := w.node("s", "small", "zone-a", od)
				drifted(w, "s")
				return w.input(), []string{a, b, c}
			},
			want: []string{"Drift[s-01]+1"},
			check: func(t *testing.T, p *Plan, nodes []string) {
				for _, n := range nodes[1:] {
					if s := skipOf(p, n); s.Reason != SkipStaticReplacementInProgress {
						t.Errorf("node %s skipped %q, want %s", n, s.Reason, SkipStaticReplacementInProgress)
					}
				}
			},
		},
		{
			name: "a static node already in a command holds the others' drift",
			build: func() (Input, []string) {
				w := newWorld(pool("s", replicas(2)))
				a := w.node("s", "small", "zone-a", od, claimAnnotation(nsv1.AnnotationDisruptionCommand, "cmd-1"))
				b := w.node("s", "small", "zone-a", od)
				drifted(w, "s")
				return w.input(), []string{a, b}
			},
			check: func(t *testing.T, p *Plan, nodes []string) {
				if s := skipOf(p, nodes[1]); s.Reason != SkipStaticReplacementInProgress {
					t.Errorf("node %s skipped %q, want %s", nodes[1], s.Reason, SkipStaticReplacementInProgress)
				}
			},
		},
		{
			name: "limits.nodes at replicas leaves no room for a drift replacement",
			build: func() (Input, []string) {
				w := newWorld(pool("s", replicas(1), nodeLimit(1)))
				a := w.node("s", "small", "zone-a", od)
				drifted(w, "s")
				return w.input(), []string{a}
			},
			check: func(t *testing.T, p *Plan, nodes []string) {
				if s := skipOf(p, nodes[0]); s.Reason != SkipStaticNodeLimit || !strings.Contains(s.Message, "limits.nodes 1") {
					t.Errorf("skip %q %q, want %s naming the limit", s.Reason, s.Message, SkipStaticNodeLimit)
				}
			},
		},
		{
			name: "an expired static node is replaced with a node of its pool in the same step",
			build: func() (Input, []string) {
				w := newWorld(pool("s", replicas(1)))
				a := w.node("s", "small", "zone-a", od, createdAgo(800*3600e9))
				w.pod(a, "1")
				return w.input(), []string{a}
			},
			want: []string{"Expiration[s-01]+1"},
			check: func(t *testing.T, p *Plan, _ []string) {
				if a := p.Actions[0]; !a.Forced || a.Replacements[0].NodePool != "s" {
					t.Errorf("forced %v replacement pool %s", a.Forced, a.Replacements[0].NodePool)
				}
			},
		},
		{
			name: "pods of a consolidated dynamic node may land on static nodes",
			build: func() (Input, []string) {
				w := newWorld(pool("s", replicas(1)), pool("d"))
				s := w.node("s", "large", "zone-a", od)
				d := w.node("d", "small", "zone-a", od)
				w.pod(d, "1")
				return w.input(), []string{s, d}
			},
			want: []string{"SingleNodeConsolidation[d-02]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, nodes := tt.build()
			p, err := Compute(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := summaries(p); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("actions %v, want %v; skipped %+v", got, tt.want, p.Skipped)
			}
			if tt.check != nil {
				tt.check(t, p, nodes)
			}
		})
	}
}
