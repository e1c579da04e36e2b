package scheduling

import (
	"fmt"
	"testing"

	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// BenchmarkSolveCatalog packs onto the real embedded catalog (every type)
// and reports the plan's $/h against the LP lower bound.
func BenchmarkSolveCatalog(b *testing.B) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	types := cat.Types()
	for _, n := range []int{1000, 5000} {
		plain, mixed := plainPods(n, 42), karpenterPods(n, 42)
		b.Run(fmt.Sprintf("plain/pods=%d", n), func(b *testing.B) { runSolveBenchOpts(b, types, plain, true, true) })
		b.Run(fmt.Sprintf("mixed/pods=%d", n), func(b *testing.B) { runSolveBenchOpts(b, types, mixed, true, true) })
	}
}
