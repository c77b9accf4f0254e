package execmode

import "golang.org/x/sys/unix"

// Mono reads CLOCK_MONOTONIC in nanoseconds: the clock electd and the guard
// share for lease deadlines. Go's own monotonic readings cannot be passed
// between processes.
func Mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("execmode: clock_gettime(CLOCK_MONOTONIC): " + err.Error()) // cannot fail on Linux or macOS
	}
	return ts.Nano()
}
