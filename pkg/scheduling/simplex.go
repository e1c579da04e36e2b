package scheduling

import "math"

// simplexMax solves max c·x s.t. A x ≤ b, x ≥ 0 for b ≥ 0 (the origin is
// feasible, so no first phase is needed) with a dense tableau. It is meant
// for the small LPs of the packing lower bound (tens of columns, hundreds
// of rows). It returns the optimal x and value; value is +Inf when the LP is
// unbounded. Entering columns follow Dantzig's rule, switching to Bland's
// rule (which cannot cycle) after many pivots.
func simplexMax(c []float64, a [][]float64, b []float64) ([]float64, float64) {
	x, v, _ := simplexMaxDual(c, a, b)
	return x, v
}

// simplexMaxDual is simplexMax that also returns the optimal dual values
// of the rows.
func simplexMaxDual(c []float64, a [][]float64, b []float64) ([]float64, float64, []float64) {
	const eps = 1e-12
	m, n := len(a), len(c)
	w := n + m + 1 // columns: x, slacks, right-hand side
	t := make([]float64, (m+1)*w)
	row := func(i int) []float64 { return t[i*w : (i+1)*w] }
	basis := make([]int, m)
	for i := 0; i < m; i++ {
		r := row(i)
		copy(r, a[i])
		r[n+i] = 1
		r[w-1] = b[i]
		basis[i] = n + i
	}
	z := row(m)
	for j := 0; j < n; j++ {
		z[j] = -c[j]
	}
	for iter := 0; ; iter++ {
		bland := iter > 50*(m+n)
		enter := -1
		for j := 0; j < w-1; j++ {
			if z[j] < -eps && (enter < 0 || !bland && z[j] < z[enter]) {
				enter = j
				if bland {
					break
				}
			}
		}
		if enter < 0 || iter > 200*(m+n)+1000 {
			break
		}
		leave, best := -1, math.Inf(1)
		for i := 0; i < m; i++ {
			r := row(i)
			if r[enter] > eps {
				ratio := r[w-1] / r[enter]
				if ratio < best-eps || ratio <= best+eps && leave >= 0 && basis[i] < basis[leave] {
					leave, best = i, ratio
				}
			}
		}
		if leave < 0 {
			return nil, math.Inf(1), nil
		}
		pr := row(leave)
		pv := pr[enter]
		for j := range pr {
			pr[j] /= pv
		}
		for i := 0; i <= m; i++ {
			if i == leave {
				continue
			}
			r := row(i)
			f := r[enter]
			if f == 0 {
				continue
			}
			for j := range r {
				r[j] -= f * pr[j]
			}
		}
		basis[leave] = enter
	}
	x := make([]float64, n)
	for i, bv := range basis {
		if bv < n {
			x[bv] = math.Max(0, row(i)[w-1])
		}
	}
	val := 0.0
	for j := range x {
		val += c[j] * x[j]
	}
	dual := make([]float64, m)
	for i := range dual {
		dual[i] = math.Max(0, z[n+i])
	}
	return x, val, dual
}
