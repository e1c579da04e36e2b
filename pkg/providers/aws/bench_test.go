package aws

import (
	"fmt"
	"sync/atomic"
	"testing"

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

// BenchmarkCreateBatched runs many Creates at once with batching on (real
// clock, idle 35ms, max 1s): identical claims share CreateFleet calls.
func BenchmarkCreateBatched(b *testing.B) {
	e := newEnv(b, envOpts{clock: clock.RealClock{}, provider: func(o *Options) { o.BatchIdle = 0 }})
	e.create(newClaim("warm"))
	before := len(e.fleetCalls())
	var n atomic.Int64
	b.SetParallelism(50) // 100 concurrent Creates on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.p.Create(e.ctx, newClaim(fmt.Sprintf("c%d", n.Add(1)))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
	b.ReportMetric(float64(len(e.fleetCalls())-before)/float64(b.N), "fleetcalls/create")
}
