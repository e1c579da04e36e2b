package operator

import "sync"

// Each calls fn(i) for every i in [0, n), at most workers at once, and
// returns when all have returned. With one worker (the simulator's setting)
// it calls them in order on the caller's goroutine, so a virtual-clock run
// does not depend on goroutine scheduling. fn must be safe to call
// concurrently otherwise; a step that needs its results in a fixed order
// writes them by index and reads them after Each.
func Each(workers, n int, fn func(i int)) {
	if workers <= 1 || n <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}
