package scheduling

import (
	"math"
	"sort"
)

// The configuration LP behind PackingLowerBound and the solver's LP seeding:
// classes of pods (equal cpu and memory requests), types with cpu, memory and
// pod slots, and cutting planes on the dual.

// maxLPGap is how far above the proven bound the last master LP may cost
// for its fills to be returned.
const maxLPGap = 0.02

// solveConfigLP runs at most maxIter rounds of cutting planes from a known
// bound lb and returns the best bound found and the fills of the last
// master LP (a cover of the pods), or no fills when the master still costs
// more than maxLPGap above the bound.
func solveConfigLP(cls []boundClass, tys []*boundType, lb float64, maxIter int) (float64, []lpPattern) {
	nk := len(cls)
	count := make([]float64, nk)
	for k, c := range cls {
		count[k] = c.n
	}
	// Start with each class's cheapest homogeneous fill as a cut.
	var cutA [][]float64
	var cutB []float64
	var cutP []lpPattern
	addCut := func(t *boundType, w []float64) {
		r := make([]float64, nk)
		for k := range w {
			r[k] = w[k] / t.price // normalised so the right-hand side is 1
		}
		cutA, cutB = append(cutA, r), append(cutB, 1)
		cutP = append(cutP, lpPattern{t: t, w: w})
	}
	for k := range cls {
		best, bestW := math.Inf(1), 0.0
		var bestT *boundType
		for _, t := range tys {
			if !t.fits[k] {
				continue
			}
			w := t.homogeneous(cls[k])
			if t.price/w < best {
				best, bestW, bestT = t.price/w, w, t
			}
		}
		if bestT == nil {
			return math.Inf(1), nil // a pod fits no type: no plan exists
		}
		w := make([]float64, nk)
		w[k] = bestW
		addCut(bestT, w)
	}
	for iter := 0; iter < maxIter; iter++ {
		u, val := simplexMax(count, cutA, cutB)
		if u == nil {
			break
		}
		// Pricing: the fill of each type that is worth most at prices u.
		type viol struct {
			ratio float64
			w     []float64
			t     *boundType
		}
		var worst []viol
		theta := 0.0
		for _, t := range tys {
			w, v := t.bestFill(cls, u)
			r := v / t.price
			theta = math.Max(theta, r)
			if r > 1+1e-9 {
				worst = append(worst, viol{r, w, t})
			}
		}
		if theta > 0 {
			lb = math.Max(lb, val/math.Max(theta, 1))
		}
		if len(worst) == 0 {
			break
		}
		if iter >= 8 && val > lb*1.3 {
			// Tailing off far from the bound (near-proportional
			// catalogs, where the aggregate LP is already tight).
			break
		}
		sort.Slice(worst, func(i, j int) bool { return worst[i].ratio > worst[j].ratio })
		for _, v := range worst[:min(len(worst), 12)] {
			addCut(v.t, v.w)
		}
	}
	// The master's row duals are the node counts (× price) of each fill.
	_, val, y := simplexMaxDual(count, cutA, cutB)
	if val > lb*(1+maxLPGap) {
		return lb, nil // not converged: the fills would mislead
	}
	var pats []lpPattern
	for i, yi := range y {
		if yi > 1e-12 {
			p := cutP[i]
			p.nodes = yi / p.t.price
			pats = append(pats, p)
		}
	}
	return lb, pats
}

type boundClass struct {
	cpu, mem, n float64
}

type boundType struct {
	whole                 bool // fills are searched in whole pods
	name                  string
	cpu, mem, pods, price float64
	fits                  []bool
}

// homogeneous is how many pods of c fill the type (whole pods when the
// type's fills are searched in whole pods).
func (t *boundType) homogeneous(c boundClass) float64 {
	w := t.pods
	if c.cpu > 0 {
		w = math.Min(w, t.cpu/c.cpu)
	}
	if c.mem > 0 {
		w = math.Min(w, t.mem/c.mem)
	}
	if t.whole {
		w = math.Floor(w)
	}
	return w
}

// bestFill solves max u·w s.t. the fill w of fitting classes stays within
// the type's cpu, memory and pods.
func (t *boundType) bestFill(cls []boundClass, u []float64) ([]float64, float64) {
	if t.whole {
		return t.bestWholeFill(cls, u)
	}
	return t.fractionalFill(cls, u)
}

// fractionalFill is bestFill in fractions of pods.
func (t *boundType) fractionalFill(cls []boundClass, u []float64) ([]float64, float64) {
	var cols []int
	for k := range cls {
		if t.fits[k] && u[k] > 0 {
			cols = append(cols, k)
		}
	}
	c := make([]float64, len(cols))
	a := [][]float64{make([]float64, len(cols)), make([]float64, len(cols)), make([]float64, len(cols))}
	for j, k := range cols {
		c[j] = u[k]
		a[0][j], a[1][j], a[2][j] = cls[k].cpu, cls[k].mem, 1
	}
	// Scale rows to 1 so cpu (millicores) and memory (bytes) pivot alike.
	b := []float64{1, 1, 1}
	for j := range cols {
		a[0][j] /= t.cpu
		a[1][j] /= t.mem
		a[2][j] /= t.pods
	}
	x, v := simplexMax(c, a, b)
	w := make([]float64, len(cls))
	for j, k := range cols {
		w[k] = x[j]
	}
	return w, v
}

// pruneDominated drops types another type beats in every dimension per
// dollar while fitting every class they fit: they add no cut the other
// does not.
func pruneDominated(all []*boundType) []*boundType {
	dominated := func(t, o *boundType) bool {
		if o.whole {
			// Whole-pod fills of t need not scale into o: o must hold
			// all of t for no more money.
			if o.cpu < t.cpu || o.mem < t.mem || o.pods < t.pods || o.price > t.price {
				return false
			}
		} else if o.cpu/o.price < t.cpu/t.price || o.mem/o.price < t.mem/t.price || o.pods/o.price < t.pods/t.price {
			return false
		}
		for k := range t.fits {
			if t.fits[k] && !o.fits[k] {
				return false
			}
		}
		return true
	}
	var out []*boundType
	for i, t := range all {
		keep := true
		for j, o := range all {
			// Of two identical types keep the first.
			if i != j && dominated(t, o) && (!dominated(o, t) || j < i) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, t)
		}
	}
	return out
}

// wholeFillPods is the most pods a type may hold for its fills to be
// searched in whole pods (a branch and bound that grows with the count).
const wholeFillPods = 24

// wholeFillSteps bounds the whole-pod search of one fill.
const wholeFillSteps = 200000

// maxPods is the most pods of the fitting classes one node holds.
func (t *boundType) maxPods(cls []boundClass) float64 {
	minCPU, minMem := math.Inf(1), math.Inf(1)
	for k, c := range cls {
		if t.fits[k] {
			minCPU, minMem = math.Min(minCPU, c.cpu), math.Min(minMem, c.mem)
		}
	}
	n := t.pods
	if minCPU > 0 {
		n = math.Min(n, math.Floor(t.cpu/minCPU))
	}
	if minMem > 0 {
		n = math.Min(n, math.Floor(t.mem/minMem))
	}
	return n
}

// bestWholeFill finds the most valuable fill in whole pods by depth-first
// search over classes, pruned by a per-dimension value-density bound.
func (t *boundType) bestWholeFill(cls []boundClass, u []float64) ([]float64, float64) {
	var ks []int
	for k := range cls {
		if t.fits[k] && u[k] > 0 {
			ks = append(ks, k)
		}
	}
	// Densest value per cpu first, so good fills are found early.
	sort.Slice(ks, func(i, j int) bool {
		return u[ks[i]]/math.Max(cls[ks[i]].cpu, 1) > u[ks[j]]/math.Max(cls[ks[j]].cpu, 1)
	})
	// suffix[i]: the best value per unit of cpu, memory and pod among ks[i:].
	type dens struct{ c, m, p float64 }
	suffix := make([]dens, len(ks)+1)
	for i := len(ks) - 1; i >= 0; i-- {
		k := ks[i]
		d := suffix[i+1]
		d.c = math.Max(d.c, u[k]/math.Max(cls[k].cpu, 1e-9))
		d.m = math.Max(d.m, u[k]/math.Max(cls[k].mem, 1e-9))
		d.p = math.Max(d.p, u[k])
		suffix[i] = d
	}
	cur := make([]float64, len(cls))
	best := make([]float64, len(cls))
	bestV := 0.0
	steps := 0
	var rec func(i int, c, m, p, v float64)
	rec = func(i int, c, m, p, v float64) {
		if steps++; steps > wholeFillSteps {
			return
		}
		if v > bestV {
			bestV = v
			copy(best, cur)
		}
		if i == len(ks) {
			return
		}
		d := suffix[i]
		bound := math.Min(d.c*(t.cpu-c), math.Min(d.m*(t.mem-m), d.p*(t.pods-p)))
		if v+bound <= bestV*(1+1e-12) {
			return
		}
		k := ks[i]
		cl := cls[k]
		most := t.pods - p
		if cl.cpu > 0 {
			most = math.Min(most, math.Floor((t.cpu-c)/cl.cpu))
		}
		if cl.mem > 0 {
			most = math.Min(most, math.Floor((t.mem-m)/cl.mem))
		}
		for n := most; n >= 0; n-- {
			cur[k] = n
			rec(i+1, c+n*cl.cpu, m+n*cl.mem, p+n, v+n*u[k])
		}
		cur[k] = 0
	}
	rec(0, 0, 0, 0, 0)
	if steps > wholeFillSteps {
		// Too many classes to search: the fractional fill is worth at
		// least as much, so the bound stays valid.
		return t.fractionalFill(cls, u)
	}
	return best, bestV
}
