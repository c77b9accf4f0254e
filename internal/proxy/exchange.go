package proxy

import (
	"context"
	"net/http"
	"time"
)

// exchange is one request and its answer on their way through this
// proxy, over its attempts.
type exchange struct {
	r      *http.Request
	w      *writer
	b      *reqBody // nil without a body
	hd     *holder
	id     string // Electd-Request-Id
	h2     bool   // the client spoke HTTP/2
	safe   bool   // idempotent (headers.go)
	peer   bool   // a peer's forward, on PeerListen
	marked bool   // the Taken interim answer was sent (peer.go)
	// resends: how often it was sent again after an attempt that may
	// have reached the application (retry.go).
	resends int
	// last is the last attempt's context, whose cause says why it ended
	// (finish logs it).
	last context.Context
	// The writer and the holder, allocated with the request.
	wv  writer
	hdv holder
}

// newExchange is q for r answered through rw, held within budget.
func newExchange(p *Proxy, rw http.ResponseWriter, r *http.Request, budget time.Duration) *exchange {
	q := &exchange{r: r, safe: idempotent(r)}
	q.wv.ResponseWriter = rw
	q.w = &q.wv
	q.hdv.init(p, budget)
	q.hd = &q.hdv
	return q
}

// watchClient makes a client that goes away end q from now on: net/http's
// server always notices, h1Server only when asked (h1Writer.watchClient).
func (q *exchange) watchClient() {
	if cw, ok := q.w.ResponseWriter.(clientWatcher); ok {
		cw.watchClient()
	}
}
