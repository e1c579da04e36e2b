package catalog

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// BenchmarkLoad is Load as every caller after the first sees it: the
// snapshot is decoded once per process, then each Load builds the types.
func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadCold includes decoding the 1.7 MB embedded JSON, which the
// first Load in a process pays.
func BenchmarkLoadCold(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		specs, err := parseSpecs(snapshotJSON)
		if err != nil {
			b.Fatal(err)
		}
		_ = FromSpecs(specs, Options{})
	}
}

// BenchmarkWithAvailability applies a busy ICE cache to the whole catalog,
// as the AWS provider does on every GetInstanceTypes.
func BenchmarkWithAvailability(b *testing.B) {
	c, err := Load(Options{})
	if err != nil {
		b.Fatal(err)
	}
	types := c.Types()
	u := NewUnavailableOfferings(clocktesting.NewFakeClock(time.Unix(0, 0)), 0)
	for i, it := range types {
		if i%10 == 0 {
			o := it.Offerings[0]
			u.MarkUnavailable(it.Name, o.Zone, o.CapacityType, "ice")
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = WithAvailability(types, u)
	}
}
