package karpenter

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/test/testenv"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

// logLines captures a logr sink's lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	l.lines = append(l.lines, prefix+" "+args)
	l.mu.Unlock()
}

func (l *logLines) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

func karpenterPool(name string, limits map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{}}},
	}}
	if limits != nil {
		_ = unstructured.SetNestedMap(u.Object, limits, "spec", "limits")
	}
	return u
}

// TestCoexistence: no Karpenter, nothing said; a Karpenter NodePool with
// room is named in an error log line, a Warning Event on it and the gauge;
// one at cpu: 0 is not; once every pool is at zero the gauge is 0.
func TestCoexistence(t *testing.T) {
	ctx := context.Background()
	rec, fake := controllertest.Recorder(clock.RealClock{})
	gauge, err := NewGauge(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	logs := &logLines{}
	c := New(h.Direct, rec, gauge, funcr.New(logs.add, funcr.Options{}), Interval)

	// No Karpenter CRD.
	res, err := c.Reconcile(ctx)
	if err != nil {
		t.Fatalf("without Karpenter's CRDs: %v", err)
	}
	if res.RequeueAfter != Interval {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, Interval)
	}
	if g := testutil.ToFloat64(gauge); g != 0 || len(fake.Events) != 0 || len(logs.take()) != 0 {
		t.Fatalf("without Karpenter: gauge %v, %d events; want 0 and none", g, len(fake.Events))
	}

	// The lab's stand-ins for Karpenter's CRDs (NodePool first).
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "karpenter", "lab-standin-crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal([]byte(strings.Split(string(raw), "\n---\n")[0]), crd); err != nil {
		t.Fatal(err)
	}
	if crd.Name != "nodepools.karpenter.sh" {
		t.Fatalf("the stand-in's first CRD is %s, want nodepools.karpenter.sh", crd.Name)
	}
	if err := h.Direct.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Direct.Delete(ctx, crd) })
	controllertest.Eventually(t, "Karpenter's NodePools served", func() error {
		var list unstructured.UnstructuredList
		list.SetAPIVersion("karpenter.sh/v1")
		list.SetKind("NodePoolList")
		return h.Direct.List(ctx, &list)
	})
	roomy := karpenterPool("default", nil)
	frozen := karpenterPool("frozen", map[string]any{"cpu": "0"})
	for _, p := range []*unstructured.Unstructured{roomy, frozen} {
		if err := h.Direct.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if g := testutil.ToFloat64(gauge); g != 1 {
		t.Errorf("nodesmith_karpenter_nodepools_with_room = %v, want 1 (default)", g)
	}
	var evts []string
	for len(fake.Events) > 0 {
		evts = append(evts, <-fake.Events)
	}
	if len(evts) != 1 || !strings.Contains(evts[0], "Warning "+ReasonHasRoom) || !strings.Contains(evts[0], "Karpenter NodePool default may still launch nodes (no limits)") ||
		!strings.Contains(evts[0], "cpu: 0") {
		t.Errorf("events = %q, want one Warning %s on default naming the fix", evts, ReasonHasRoom)
	}
	lines := logs.take()
	if len(lines) != 1 || !strings.Contains(lines[0], `"error"="Karpenter NodePools still have room`) || !strings.Contains(lines[0], `"karpenterNodePools"="default"`) {
		t.Errorf("log = %q, want one error line naming default", lines)
	}

	// Both at zero: quiet.
	if err := unstructured.SetNestedField(roomy.Object, "0", "spec", "limits", "cpu"); err != nil {
		t.Fatal(err)
	}
	if err := h.Direct.Update(ctx, roomy); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if g := testutil.ToFloat64(gauge); g != 0 {
		t.Errorf("with every Karpenter NodePool at cpu: 0 the gauge is %v, want 0", g)
	}
	if n := len(fake.Events); n != 0 {
		t.Errorf("%d more events with every pool at zero", n)
	}
	if lines := logs.take(); len(lines) != 0 {
		t.Errorf("log lines with every pool at zero: %q", lines)
	}
}

// TestRoomReadsTheObject: Room reads spec.limits and status.resources as
// Karpenter writes them (strings and numbers).
func TestRoomReadsTheObject(t *testing.T) {
	tests := []struct {
		name   string
		limits map[string]any
		status map[string]any
		want   bool
	}{
		{name: "no limits", want: true},
		{name: "cpu string 0", limits: map[string]any{"cpu": "0"}},
		{name: "cpu number 0", limits: map[string]any{"cpu": int64(0)}},
		{name: "used up", limits: map[string]any{"cpu": "10"}, status: map[string]any{"cpu": "12"}},
		{name: "room left", limits: map[string]any{"cpu": int64(100), "memory": "400Gi"}, status: map[string]any{"cpu": "12", "memory": "48Gi"}, want: true},
		{name: "unreadable limit counts as room", limits: map[string]any{"cpu": "lots"}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := karpenterPool("p", tt.limits)
			if tt.status != nil {
				_ = unstructured.SetNestedMap(p.Object, tt.status, "status", "resources")
			}
			if got, why := Room(p); got != tt.want {
				t.Errorf("Room = %v (%s), want %v", got, why, tt.want)
			}
		})
	}
}
