package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// writer is the client's ResponseWriter, watched: started says an answer
// is under way (nothing else may be written then), and each write is
// progress for the attempt's guard. Interim answers are filtered: a peer's
// 102 with Electd-Taken marks the attempt taken and goes no further, a
// 100 Continue is the server's own business, and no other carries an
// Electd-* header on. ReverseProxy reaches Flush and Hijack through
// Unwrap (http.ResponseController).
type writer struct {
	http.ResponseWriter
	started atomic.Bool
	g       atomic.Pointer[guard]
	a       atomic.Pointer[attempt] // the attempt under way
}

func (w *writer) WriteHeader(code int) {
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		h := w.Header()
		taken := h.Get(HeaderTaken) != ""
		if a := w.a.Load(); taken && a != nil {
			a.taken.Store(true)
		}
		if taken || code == http.StatusContinue {
			return
		}
		stripElectd(h)
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.started.Store(true)
	unannounceElectd(w.Header())
	w.ResponseWriter.WriteHeader(code)
}

func (w *writer) Write(b []byte) (int, error) {
	w.started.Store(true)
	n, err := w.ResponseWriter.Write(b)
	if g := w.g.Load(); g != nil && n > 0 {
		g.progress(1)
	}
	return n, err
}

func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// upstreamBody is an answer's body from the application or the leader's
// proxy; each read is progress. At its end, res's trailers (filled in by
// then, and read by ReverseProxy after it) lose their Electd-* fields.
type upstreamBody struct {
	io.ReadCloser
	g   *guard
	res *http.Response
}

func (u *upstreamBody) Read(p []byte) (int, error) {
	n, err := u.ReadCloser.Read(p)
	if n > 0 {
		u.g.progress(1)
	}
	if err != nil {
		stripElectd(u.res.Trailer)
	}
	return n, err
}

// copyBuffer is the size of ReverseProxy's copy buffers.
const copyBuffer = 16 << 10

// bufferPool lends ReverseProxy its copy buffers: without one it allocates
// one per answer. It pools the arrays themselves, so that a Put allocates
// nothing.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[copyBuffer]byte); ok {
		return v[:]
	}
	return new([copyBuffer]byte)[:]
}

func (b *bufferPool) Put(buf []byte) {
	if len(buf) == copyBuffer {
		b.p.Put((*[copyBuffer]byte)(buf))
	}
}

// retryAfter is the Retry-After of a 503 or 504 from the proxy: a new
// leader usually takes over within a second, and a hung application's
// leader steps down a few checks after a response timeout.
const retryAfter = "1"

// unavailable answers 503 with Retry-After and msg, unless an answer is
// under way, and returns res.
func unavailable(w *writer, res Result, msg string) Result {
	if !w.started.Load() {
		w.Header().Set("Retry-After", retryAfter)
		writeError(w, http.StatusServiceUnavailable, msg)
	}
	return res
}

// gatewayTimeout answers 504 with Retry-After and msg, unless an answer is
// under way: every 503 and 504 of the proxy says when to try again
// (docs/design/proxy.md, "Forwarding": bounded time).
func gatewayTimeout(w *writer, msg string) {
	if !w.started.Load() {
		w.Header().Set("Retry-After", retryAfter)
		writeError(w, http.StatusGatewayTimeout, msg)
	}
}

// writeError writes {"error": msg} with code, unless an answer is under way.
func writeError(w *writer, code int, msg string) {
	if w.started.Load() {
		return
	}
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b) // an error means the client went away
}
