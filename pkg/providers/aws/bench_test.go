package aws

import (
	"fmt"
	"testing"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"k8s.io/utils/clock"
)

// BenchmarkCreate measures Create round trips (resolve and types cached,
// one CreateFleet over loopback HTTP through the SDK per claim) against the
// simulated AWS, batching off.
func BenchmarkCreate(b *testing.B) {
	e := newEnv(b, envOpts{})
	e.create(newClaim("warm"))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.p.Create(e.ctx, newClaim(fmt.Sprintf("c%d", i))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}

// BenchmarkCreateFullCatalog is the same with all snapshot types, so each
// Create plans over the whole catalog and sends 60 overrides.
func BenchmarkCreateFullCatalog(b *testing.B) {
	e := newEnv(b, envOpts{specs: snapshotSpecs(b, nil)})
	e.create(sized(newClaim("warm")))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.p.Create(e.ctx, sized(newClaim(fmt.Sprintf("c%d", i)))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}

// BenchmarkCreateBatched launches 20 identical claims per CreateAll, as a
// provisioning cycle does: they share one CreateFleet call.
func BenchmarkCreateBatched(b *testing.B) {
	e := newEnv(b, envOpts{clock: clock.RealClock{}})
	e.create(newClaim("warm"))
	before := len(e.fleetCalls())
	const perCall = 20
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i += perCall {
		claims := make([]*nsv1.NodeClaim, perCall)
		for j := range claims {
			n++
			claims[j] = newClaim(fmt.Sprintf("c%d", n))
		}
		for _, r := range e.p.CreateAll(e.ctx, claims) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "creates/s")
	b.ReportMetric(float64(len(e.fleetCalls())-before)/float64(n), "fleetcalls/create")
}
