package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// Bounds of the copies kept of streamed request bodies (docs/design/proxy.md,
// "Forwarding": what may be sent again). A body of a declared length up to
// Config.BufferSize is received whole before the request goes anywhere
// (buffer.go); a longer one, or one of unknown length, is streamed, and
// while it is small the proxy also keeps what it read, so that a request
// that provably reached no application (net/http's transport wrote
// nothing of it to a kept-alive connection that turned out closed; a peer
// bounced it) can still be sent elsewhere whole.
const (
	// maxKeptBody: past this size a body is no longer kept.
	maxKeptBody = 64 << 10
	// keptBudget bounds the copies of all requests at once; past it a
	// body is streamed without one.
	keptBudget = 8 << 20
)

// reqBody is a request's body, watched: each read is progress for the
// attempt's guard (slot 0, active from each hand-over until the body
// ends), touched says whether any of it was read, and while it is small
// it is kept so that it can be read again from the start (rewind). A
// buffered body (whole) is read from memory and can always be rewound.
type reqBody struct {
	orig   io.ReadCloser
	size   int64         // declared length, -1 when unknown or trailers follow it
	budget *atomic.Int64 // what all kept copies may still take
	g      atomic.Pointer[guard]
	whole  []byte // a buffered body: all of it
	free   func() // gives a buffered body's bytes back

	mu     sync.Mutex
	src    io.Reader // orig, or the kept copy once rewound
	read   bool
	end    bool
	keep   bool   // still keeping a copy
	kept   []byte // what was read from orig, while keep
	copied int64  // bytes of the budget kept holds
}

// newBody watches rc, of size bytes (-1: unknown, or trailers to come).
func newBody(rc io.ReadCloser, size int64, budget *atomic.Int64) *reqBody {
	return &reqBody{orig: rc, src: rc, size: size, budget: budget, keep: true}
}

// bufferedBody is a body received whole; free gives its bytes back to the
// buffers' budget at release.
func bufferedBody(buf []byte, free func()) *reqBody {
	return &reqBody{src: bytes.NewReader(buf), whole: buf, free: free}
}

func (b *reqBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	b.read = true
	src := b.src
	b.mu.Unlock()
	n, err := src.Read(p) // not under mu: a read of the client's body may block
	b.mu.Lock()
	if src == io.Reader(b.orig) && n > 0 && b.keep {
		b.keepLocked(p[:n])
	}
	if err != nil {
		b.end = true
	}
	b.mu.Unlock()
	if g := b.g.Load(); g != nil {
		if err != nil {
			g.done(0)
		} else if n > 0 {
			g.progress(0)
		}
	}
	return n, err
}

func (b *reqBody) keepLocked(p []byte) {
	if len(b.kept)+len(p) > maxKeptBody || b.budget.Add(-int64(len(p))) < 0 {
		if len(b.kept)+len(p) <= maxKeptBody {
			b.budget.Add(int64(len(p))) // the failed take
		}
		b.dropLocked()
		return
	}
	b.copied += int64(len(p))
	b.kept = append(b.kept, p...)
}

func (b *reqBody) dropLocked() {
	b.keep = false
	b.kept = nil
	if b.budget != nil {
		b.budget.Add(b.copied)
	}
	b.copied = 0
}

// Close is not passed on: net/http closes the request's body itself.
func (b *reqBody) Close() error { return nil }

// touched reports whether any of the body may have been sent.
func (b *reqBody) touched() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read
}

// rewind makes the body readable again from the start, if it was kept
// whole (read to its end, or to its declared length: an HTTP/2 GOAWAY can
// come between the last bytes and the end) or not read at all; false
// otherwise.
func (b *reqBody) rewind() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.whole != nil:
		b.src, b.read, b.end = bytes.NewReader(b.whole), false, false
		return true
	case !b.read:
		return true
	case !b.keep:
		return false
	case !b.end && (b.size < 0 || int64(len(b.kept)) != b.size):
		return false // more may come
	}
	b.src, b.read, b.end = bytes.NewReader(b.kept), false, false
	return true
}

// errBodySent: a request's body was read, so it cannot be sent again.
var errBodySent = errors.New("proxy: the request's body was sent already")

// again is the request's GetBody: with it net/http's transports send a
// request again on another connection when the one they chose took
// nothing of it (HTTP/1: a kept-alive connection found closed before a
// byte was written; HTTP/2: a GOAWAY or REFUSED_STREAM, which say the
// application never took the stream). They may have read some of the body
// by then.
func (b *reqBody) again() (io.ReadCloser, error) {
	if !b.rewind() {
		return nil, errBodySent
	}
	return b, nil
}

// buffered reports a body received whole before it was routed.
func (b *reqBody) buffered() bool { return b.whole != nil }

// release gives the copy's bytes back to the budget: the request is over.
func (b *reqBody) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.whole != nil {
		b.whole = nil
		b.free()
		return
	}
	b.dropLocked()
}

func (b *reqBody) attach(g *guard) {
	b.g.Store(g)
	b.mu.Lock()
	end := b.end
	b.mu.Unlock()
	if g != nil && !end {
		g.progress(0)
	}
}

// buffers bounds the bytes of the bodies buffered at once.
type buffers struct {
	sem   *semaphore.Weighted
	inUse atomic.Int64
}

func newBuffers(total int64) *buffers { return &buffers{sem: semaphore.NewWeighted(total)} }

// InUse is the bytes buffered now.
func (b *buffers) InUse() int64 { return b.inUse.Load() }

func (b *buffers) acquire(ctx context.Context, n int64) error {
	if err := b.sem.Acquire(ctx, n); err != nil {
		return err
	}
	b.inUse.Add(n)
	return nil
}

func (b *buffers) release(n int64) {
	b.inUse.Add(-n)
	b.sem.Release(n)
}

// tryAcquire takes n bytes of the budget if they are free now.
func (b *buffers) tryAcquire(n int64) bool {
	if !b.sem.TryAcquire(n) {
		return false
	}
	b.inUse.Add(n)
	return true
}
