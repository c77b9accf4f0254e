package proxy

import (
	"time"

	"github.com/electd/electd/internal/clock"
)

// after returns a channel closed d from now on c, and a function that stops
// the timer (the channel then never closes): unlike clock.After, a wait
// that ends early leaves no timer behind.
func after(c clock.Clock, d time.Duration) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	t := c.AfterFunc(d, func() { close(ch) })
	return ch, func() { t.Stop() }
}
