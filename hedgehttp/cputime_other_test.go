//go:build !unix

package hedgehttp

import "time"

func cpuTime() time.Duration { return 0 }
