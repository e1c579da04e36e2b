package aws

import (
	"fmt"
	"testing"
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
