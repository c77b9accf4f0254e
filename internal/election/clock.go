package election

import (
	"time"

	"github.com/electd/electd/internal/clock"
)

// The package reads time only through a clock.Clock (Config.Clock,
// SessionConfig.Clock): the lease, claim_delay, the selector term, retries
// and back-offs.

// after returns a channel closed d from now on c, and a function that stops
// the timer (the channel then never closes).
func after(c clock.Clock, d time.Duration) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	t := c.AfterFunc(d, func() { close(ch) })
	return ch, func() { t.Stop() }
}
