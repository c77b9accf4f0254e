package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// writer is the client's ResponseWriter, watched: started says an answer
// is under way (nothing else may be written then), and each write is
// progress for the attempt's guard. ReverseProxy reaches Flush and
// Hijack through Unwrap (http.ResponseController).
type writer struct {
	http.ResponseWriter
	started atomic.Bool
	g       atomic.Pointer[guard]
}

func (w *writer) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.started.Store(true)
	}
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
// proxy; each read is progress.
type upstreamBody struct {
	io.ReadCloser
	g *guard
}

func (u *upstreamBody) Read(p []byte) (int, error) {
	n, err := u.ReadCloser.Read(p)
	if n > 0 {
		u.g.progress(1)
	}
	return n, err
}

// bufferPool lends ReverseProxy its 32 KiB copy buffers: without one it
// allocates one per answer.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// readHops reads the hop count and hold budget a peer proxy sent (see
// HeaderHop, HeaderHold); a client may send them too, which only ever
// shortens its own wait or forwarding. Anything malformed is a 400.
func readHops(h http.Header, hold time.Duration) (hop int, budget time.Duration, err error) {
	budget = hold
	if v, ok := h[HeaderHop]; ok {
		n, err := strconv.ParseUint(single(v), 10, 8)
		if err != nil || n > maxHops {
			return 0, 0, fmt.Errorf("%s: want one whole number from 0 to %d", HeaderHop, maxHops)
		}
		hop = int(n)
	}
	if v, ok := h[HeaderHold]; ok {
		ms, err := strconv.ParseUint(single(v), 10, 32)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: want one whole number of milliseconds", HeaderHold)
		}
		budget = min(hold, time.Duration(ms)*time.Millisecond)
	}
	return hop, budget, nil
}

// single is the value of a header sent once; "" (which parses as nothing)
// when sent several times.
func single(v []string) string {
	if len(v) != 1 {
		return ""
	}
	return v[0]
}

// stripElectd removes every header named Electd-* (in any case, and with
// '_' for '-', which CGI-style servers read as the same name), so that a
// client can forge neither the fencing headers nor a peer's hop count on
// their way to the application.
func stripElectd(h http.Header) {
	for k := range h {
		if len(k) > 6 && strings.EqualFold(k[:6], "electd") && (k[6] == '-' || k[6] == '_') {
			delete(h, k)
		}
	}
}

// isUpgrade reports a request that asks to switch protocols (WebSocket).
func isUpgrade(h http.Header) bool {
	if h.Get("Upgrade") == "" {
		return false
	}
	for _, v := range h["Connection"] {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}

// retryAfter is the Retry-After of a 503 from the proxy: a new leader
// usually takes over within a second.
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
