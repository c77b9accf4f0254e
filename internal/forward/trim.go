package forward

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/electd/electd/internal/clock"
)

// trimEvery paces the look at whether the proxy has gone quiet.
const trimEvery = 10 * time.Second

// trimWhenQuiet gives back to the system, once, the memory a burst of
// traffic left behind (docs/design/proxy-app.md, "Forwarding": bounds): when served
// moved during one period of trimEvery and not during the next, it calls
// release. A proxy that has carried load keeps megabytes of garbage and of
// freed heap until the runtime's two-minute collection and its slow
// scavenger get to them, which an idle sidecar should not hold; a busy one
// is never interrupted, and an idle one is looked at every ten seconds.
func trimWhenQuiet(ctx context.Context, c clock.Clock, served func() uint64, release func()) {
	last, busy := served(), false
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.After(trimEvery):
		}
		n := served()
		switch {
		case n != last:
			busy = true
		case busy:
			busy = false
			release()
		}
		last = n
	}
}

// freeMemory is trimWhenQuiet's release as the daemon runs it: a
// collection, and the freed memory returned to the system; twice, since
// what the first collection finds only in the pools of buffers (net/http's,
// ReverseProxy's copy buffers) is freed by the second.
func freeMemory() {
	debug.FreeOSMemory()
	debug.FreeOSMemory()
}
