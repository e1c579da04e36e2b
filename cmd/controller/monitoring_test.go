package main

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sigsyaml "sigs.k8s.io/yaml"

	pricingctrl "github.com/nodesmith/nodesmith/pkg/controllers/pricing"
	"github.com/nodesmith/nodesmith/pkg/metrics"
)

// recorder is a Registerer that keeps what is registered.
type recorder struct{ collectors []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}
func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}
func (r *recorder) Unregister(prometheus.Collector) bool { return false }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// registeredNames are the names of every nodesmith_ metric the controller
// registers, with _bucket, _sum and _count for its histograms and summaries.
func registeredNames(t *testing.T) map[string]bool {
	t.Helper()
	rec := &recorder{}
	if _, err := metrics.New(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := pricingctrl.NewMetrics(rec); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range rec.collectors {
		ch := make(chan *prometheus.Desc, 100)
		c.Describe(ch)
		close(ch)
		_, hist := c.(prometheus.Histogram)
		_, histVec := c.(*prometheus.HistogramVec)
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("no name in %s", d)
			}
			names[m[1]] = true
			if hist || histVec {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[m[1]+s] = true
				}
			}
		}
	}
	if !names["nodesmith_nodepool_usage"] || !names["nodesmith_interruption_message_age_seconds_bucket"] {
		t.Fatalf("the registry scan missed known metrics: %v", names)
	}
	return names
}

var metricRef = regexp.MustCompile(`\bnodesmith_[a-z0-9_]+`)

// TestChartAlertsAndDashboardUseRealMetrics renders the chart with the
// PrometheusRule and the Grafana dashboard on, and checks that every metric
// an alert or a panel reads is one the controller registers; with the
// default values neither is rendered.
func TestChartAlertsAndDashboardUseRealMetrics(t *testing.T) {
	off := render(t, "clusterName: demo\n")
	if len(off["PrometheusRule"]) != 0 || len(off["ConfigMap"]) != 0 {
		t.Fatalf("the default values render %d PrometheusRules and %d ConfigMaps, want none (off by default)", len(off["PrometheusRule"]), len(off["ConfigMap"]))
	}
	objs := render(t, "clusterName: demo\nprometheusRule:\n  enabled: true\n  pendingPodMinutes: 7\ngrafanaDashboard:\n  enabled: true\n")
	if len(objs["PrometheusRule"]) != 1 || len(objs["ConfigMap"]) != 1 {
		t.Fatalf("rendered %d PrometheusRules and %d ConfigMaps, want one each", len(objs["PrometheusRule"]), len(objs["ConfigMap"]))
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := sigsyaml.Unmarshal(objs["PrometheusRule"][0], &rule); err != nil {
		t.Fatal(err)
	}
	exprs := map[string]string{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			exprs["alert "+r.Alert] = r.Expr
		}
	}
	for _, want := range []string{"NodesmithLaunchFailures", "NodesmithPodsPendingTooLong", "NodesmithInterruptionMessagesWaiting", "NodesmithDisruptionBudgetExhausted"} {
		if exprs["alert "+want] == "" {
			t.Errorf("no alert %s", want)
		}
	}
	if e := exprs["alert NodesmithPodsPendingTooLong"]; !strings.HasSuffix(e, "> 420") {
		t.Errorf("pendingPodMinutes 7 gives %q, want a threshold of 420 s", e)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := sigsyaml.Unmarshal(objs["ConfigMap"][0], &cm); err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(cm.Data["nodesmith.json"]), &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			exprs["panel "+p.Title+" #"+string(rune('A'+i))] = tg.Expr
		}
	}
	if len(dash.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	names := registeredNames(t)
	var where []string
	for w := range exprs {
		where = append(where, w)
	}
	sort.Strings(where)
	for _, w := range where {
		refs := metricRef.FindAllString(exprs[w], -1)
		if len(refs) == 0 {
			t.Errorf("%s reads no nodesmith_ metric: %s", w, exprs[w])
		}
		for _, ref := range refs {
			if !names[ref] {
				t.Errorf("%s reads %s, which the controller does not register", w, ref)
			}
		}
	}
}
