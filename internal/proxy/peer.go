package proxy

import (
	"net/http"
	"strconv"
)

// A forward from a peer's proxy, on PeerListen (docs/design/proxy.md,
// "Forwarding": every forward names its election and its leader). Only a
// peer that completed the TLS handshake with the election's key gets
// here (peertls.go), so only participants see the 421's view. It names
// the election and the leadership (fencing token) it is meant for; this
// proxy takes it only when it is that leadership, with a valid lease, and
// says so in an interim 102 (Electd-Taken) before its application gets
// it. Anything else it bounces at once with its own view of the leader
// (421), unprocessed: a forward is never forwarded again. While that
// leadership hands over, the forward waits; then it is taken or bounced.

func (h *httpProxy) servePeer(rw http.ResponseWriter, r *http.Request) {
	h.active.Add(1)
	defer h.active.Done()
	p := h.p
	if !checkFraming(&writer{ResponseWriter: rw}, r, p.rec) {
		return
	}
	defer framingDone(r)
	if optionsStar(rw, r) {
		return
	}
	fw, err := readForward(r.Header, p.cfg.HoldTime)
	if err != nil {
		writeError(&writer{ResponseWriter: rw}, http.StatusBadRequest, err.Error()+" (this is the port of the other participants' proxies)")
		p.rec.Request(ResultBadRequest)
		return
	}
	// The forwarding headers are the peer's, which set them; what no
	// proxy sends goes (headers.go, owned).
	cleanHeaders(r.Header, true)
	dropH2CUpgrade(r.Header)
	guardTrailers(r)
	if fw.requestID != "" {
		r.Header.Set(HeaderRequestIDOut, fw.requestID)
	}
	q := newExchange(p, rw, r, fw.hold)
	q.id, q.h2, q.peer = fw.requestID, fw.h2, true
	res := ResultUpstreamError
	defer h.finish(q, &res)
	if hasBody(r) {
		q.b = h.stream(rw, r)
		defer q.b.release()
		r.Body, r.GetBody = q.b, q.b.again
	}
	res = h.take(q, fw)
	if res == ResultCanceled {
		unavailable(q.w, res, "the request was canceled")
	}
}

// take hands a peer's forward to the application, or holds or bounces it:
// route's loop, with a bounce where this proxy does not take the forward
// or cannot mark it as taken.
func (h *httpProxy) take(q *exchange, fw forward) Result {
	p := h.p
	return h.send(q, func() decision { return p.decideTake(fw.election, fw.token) }, func(d decision) (Result, bool) {
		switch d.way {
		case toBounce:
			return bounce(q, d.route), true
		case toApp:
			if !h.mark(q, d) {
				p.appDone()
				return bounce(q, p.view()), true
			}
		}
		return "", false
	})
}

// mark tells the peer that this leadership takes its forward (an interim
// 102 with Electd-Taken, written before anything else the application
// may cause), then checks again that it still leads with a valid lease
// and that the peer has not given up: only then may the application have
// it. The peer reads what arrives before its later pings' answers: a
// forward that was not marked when a newer leader was known and a ping
// came back is one this proxy never hands over, since its lease ended.
func (h *httpProxy) mark(q *exchange, d decision) bool {
	if !q.marked {
		hdr := q.w.Header()
		hdr.Set(HeaderTaken, strconv.FormatInt(d.route.Token, 10))
		q.w.ResponseWriter.WriteHeader(http.StatusProcessing)
		hdr.Del(HeaderTaken)
		q.marked = true
	}
	return q.r.Context().Err() == nil && h.p.stillLeads(d.route.Token)
}
