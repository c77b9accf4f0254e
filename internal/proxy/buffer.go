package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
)

// Request buffering (docs/design/proxy-app.md, "Forwarding": isolation of clients), as nginx's
// proxy_request_buffering: a body of a declared length up to BufferSize is
// received whole, within ClientBodyTimeout in total, before the request
// goes anywhere, so that a client that sends its body slowly holds only
// its own connection here, never a connection or a stream at the leader,
// and so that the request can be sent again whole when it provably
// reached no application. All bodies buffered at once take at most
// BufferTotal bytes; a request waits for room within its hold time.

var (
	errBufferFull  = errors.New("proxy: no room to buffer the body within the hold time")
	errBodyTimeout = errors.New("proxy: the body did not arrive within the client body timeout")
)

// shouldBuffer reports a body that is received whole: of a declared
// length up to BufferSize. One of unknown length may be a stream whose end
// depends on the answer (gRPC streaming): it is never waited for.
func (h *httpProxy) shouldBuffer(r *http.Request) bool {
	return r.ContentLength > 0 && r.ContentLength <= int64(h.p.cfg.BufferSize)
}

// buffer receives r's body whole: it waits for room in the budget (within
// what is left of the hold time), then reads the body within
// ClientBodyTimeout. On failure it answers the client and returns the
// result; the body is released by the caller otherwise.
func (h *httpProxy) buffer(w *writer, r *http.Request, hd *holder) (*reqBody, Result) {
	n := r.ContentLength
	if !h.buffers.tryAcquire(n) {
		if res := h.waitRoom(w, r, n, hd); res != "" {
			return nil, res
		}
	}
	buf, res := h.receive(w, r, n)
	if res != "" {
		h.buffers.release(n)
		return nil, res
	}
	return bufferedBody(buf, func() { h.buffers.release(n) }), ""
}

// waitRoom waits for n bytes of the budget, within what is left of the
// hold time; on failure it answers the client and returns the result.
func (h *httpProxy) waitRoom(w *writer, r *http.Request, n int64, hd *holder) Result {
	p := h.p
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	t := p.clock.AfterFunc(hd.remaining(), func() { cancel(errBufferFull) })
	stop := context.AfterFunc(p.stopping, func() { cancel(errShutdown) })
	err := h.buffers.acquire(ctx, n)
	t.Stop()
	stop()
	if err != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errBufferFull):
			return unavailable(w, ResultHeldCap, "too many request bodies are being buffered; try again")
		case errors.Is(cause, errShutdown):
			return unavailable(w, ResultShutdown, "the proxy is shutting down")
		}
		return ResultCanceled
	}
	return ""
}

// receive reads the n bytes of r's body and its end within
// ClientBodyTimeout; an HTTP/1 connection counts as receiving meanwhile,
// which makes it a candidate for eviction at MaxConnections (the one
// receiving slowest goes first).
func (h *httpProxy) receive(w *writer, r *http.Request, n int64) ([]byte, Result) {
	p := h.p
	rc := http.NewResponseController(w.ResponseWriter)
	var late atomic.Bool
	t := p.clock.AfterFunc(p.cfg.ClientBodyTimeout, func() {
		late.Store(true)
		_ = rc.SetReadDeadline(past)
	})
	tc := connOf(r)
	if tc != nil {
		p.conns.receiving(tc, true)
		defer p.conns.receiving(tc, false)
	}
	buf := make([]byte, n)
	_, err := io.ReadFull(countingReader{r.Body, tc}, buf)
	if err == nil {
		var one [1]byte
		if _, err = r.Body.Read(one[:]); errors.Is(err, io.EOF) {
			err = nil // the end, and the trailers with it
		}
	}
	if t.Stop() && err == nil {
		return buf, ""
	}
	_ = rc.SetReadDeadline(zeroTime)
	w.Header().Set("Connection", "close")
	switch {
	case err == nil: // whole, just as the timer fired
		return buf, ""
	case tc != nil && tc.evicted.Load():
		return nil, ResultEvicted // closed: the proxy is at its connection limit and this body came slowest
	case late.Load():
		writeError(w, http.StatusRequestTimeout, errBodyTimeout.Error()[len("proxy: "):])
		return nil, ResultClientTimeout
	case r.Context().Err() != nil:
		return nil, ResultCanceled
	}
	writeError(w, http.StatusBadRequest, "the request's body could not be read: "+err.Error())
	return nil, ResultBadRequest
}

// countingReader counts what it reads as the receiving connection's
// progress.
type countingReader struct {
	r  io.Reader
	tc *trackedConn
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if c.tc != nil && n > 0 {
		c.tc.recvBytes.Add(int64(n))
	}
	return n, err
}
