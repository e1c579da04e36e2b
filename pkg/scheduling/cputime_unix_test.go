//go:build unix

package scheduling

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) the test process has used: on a
// machine shared with other work, wall-clock benchmarks measure the load
// as much as the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
