package controllertest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Series are the series c collects now, as written to the wire.
func Series(t *testing.T, c prometheus.Collector) []*dto.Metric {
	t.Helper()
	ch := make(chan prometheus.Metric, 1000)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var out []*dto.Metric
	for mt := range ch {
		d := &dto.Metric{}
		if err := mt.Write(d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}
