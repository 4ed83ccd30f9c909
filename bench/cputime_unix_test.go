//go:build unix

package bench

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) this process has used: benchmarks report it per
// operation because, on a shared machine, it varies much less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
