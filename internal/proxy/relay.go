package proxy

import (
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/net/http/httpguts"
)

// The relay: a plain request to an HTTP/1.1 application, handed over by
// hand (docs/design/proxy.md, "A hop's cost"). For each request,
// ReverseProxy clones it (its header map deep), rewrites the clone
// through a ProxyRequest and the URL's join, and net/http's Request.Write
// formats the head with fmt; on the way back it copies the answer through
// a flush timer's writer. A request from the client port's own loop
// (h1.go) that appClient would carry takes none of that: relay applies
// the same steps to a pooled map that shares the request's values, writes
// the head in Request.Write's order with net/http's own Header.WriteSubset,
// and copies an answer that is in hand whole as ReverseProxy copies it. An
// answer not in hand (a stream, trailers, an event stream) goes on
// through ReverseProxy, already read (attempt.pending). The bytes the
// application and the client get are the same either way
// (TestRelayWritesWhatReverseProxyWrites).
//
// Written by hand: ReverseProxy takes a request only whole, through
// ServeHTTP, and no maintained library relays into an http.ResponseWriter
// with less.

// relayable reports whether a's request goes by relay: to an HTTP/1.1
// application, direct (appclient.go), on the client port's own loop, with
// a body that is whole and as long as it says, and a head Request.Write
// would write as it stands.
func (a *attempt) relayable() bool {
	q := a.q
	r := q.r
	if a.h.noRelay || a.to != TargetApp || a.h2 || q.peer || !direct(r, a.oneWrite) || r.Trailer != nil || r.Close {
		return false
	}
	if _, ok := q.w.ResponseWriter.(*h1Writer); !ok {
		return false
	}
	if strings.HasPrefix(r.Host, "[") {
		return false // Request.Write removes an IPv6 zone
	}
	if n := r.ContentLength; n != 0 && r.Body != nil && r.Body != http.NoBody {
		return a.oneWrite && int64(len(q.b.whole)) == n
	}
	return true
}

// outHeaders lends relay its outgoing header maps.
var outHeaders = sync.Pool{New: func() any { return make(http.Header, 16) }}

// relayExclude are the fields Request.Write writes apart from the header
// map, or not at all (net/http's reqWriteExcludeHeader).
var relayExclude = map[string]bool{"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true}

// hopHeaders are the hop-by-hop fields ReverseProxy removes both ways.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopByHop removes the fields h's Connection names, and hopHeaders,
// as ReverseProxy does.
func removeHopByHop(h http.Header) {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	for _, f := range hopHeaders {
		delete(h, f)
	}
}

// relay hands a's request to the application, and relays its answer.
// What came of it is in the attempt, as after run.
func (a *attempt) relay() {
	q, h := a.q, a.h
	h.relayed.Add(1)
	in := q.r
	out := outHeaders.Get().(http.Header)
	for k, vv := range in.Header {
		out[k] = vv
	}
	// ReverseProxy's steps on its clone, in its order (Rewrite mode).
	removeHopByHop(out)
	if httpguts.HeaderValuesContainsToken(in.Header["Te"], "trailers") {
		out["Te"] = []string{"trailers"}
	}
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		delete(out, k)
	}
	a.outHeader(in.Header, out)
	var body []byte
	if a.oneWrite {
		body = q.b.whole
	}
	a.trace.Got1xxResponse = a.interim
	res, err := h.appDirect.send(a.ctx, &a.trace, in, func(w io.Writer) error { return writeHead(w, in, out, body) }, false)
	clear(out)
	outHeaders.Put(out)
	if err != nil {
		a.err = err // as ReverseProxy's ErrorHandler (keepError)
		return
	}
	if !inHand(res.Body) || len(res.Trailer) > 0 || strings.Contains(res.Header.Get("Content-Type"), "event-stream") {
		// ReverseProxy's way from here: its transport (RoundTrip) gives it
		// this answer.
		a.pending = res
		a.run()
		return
	}
	if err := a.modify(res); err != nil {
		_ = res.Body.Close()
		a.err = err
		return
	}
	removeHopByHop(res.Header)
	w := q.w
	copyHeader(w.Header(), res.Header)
	w.WriteHeader(res.StatusCode)
	buf := h.copyBuffers.Get()
	copyBody(w, res.Body, buf)
	h.copyBuffers.Put(buf)
	_ = res.Body.Close()
}

// copyBody copies src to dst through buf, as ReverseProxy's copyBuffer:
// until src ends or either fails. A failed write to a client that went
// away leaves the answer short, which h1Writer.finish sees.
func copyBody(dst io.Writer, src io.Reader, buf []byte) {
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if m, err := dst.Write(buf[:n]); err != nil || m != n {
				return
			}
		}
		if rerr != nil {
			return
		}
	}
}

// interim relays an interim answer (103 Early Hints) as ReverseProxy's
// trace does.
func (a *attempt) interim(code int, header textproto.MIMEHeader) error {
	w := a.q.w
	h := w.Header()
	copyHeader(h, http.Header(header))
	w.WriteHeader(code)
	clear(h)
	return nil
}

// copyHeader adds src's values to dst, as ReverseProxy's copyHeader.
func copyHeader(dst, src http.Header) {
	for k, vv := range src {
		for _, v := range vv {
			dst.Add(k, v)
		}
	}
}

// writeHead writes the request's head as Request.Write writes
// ReverseProxy's clone of in with header out, then body.
func writeHead(w io.Writer, in *http.Request, out http.Header, body []byte) error {
	bw := w.(io.StringWriter)
	_, _ = bw.WriteString(in.Method)
	_, _ = bw.WriteString(" ")
	_, _ = bw.WriteString(in.URL.RequestURI())
	_, _ = bw.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = bw.WriteString(in.Host)
	_, _ = bw.WriteString("\r\n")
	if vv := out["User-Agent"]; len(vv) > 0 && vv[0] != "" {
		_, _ = bw.WriteString("User-Agent: ")
		// No CR or LF to replace: h1Conn took only valid field values.
		_, _ = bw.WriteString(textproto.TrimString(vv[0]))
		_, _ = bw.WriteString("\r\n")
	}
	switch m := in.Method; {
	case len(body) > 0:
		_, _ = bw.WriteString("Content-Length: ")
		_, _ = bw.WriteString(strconv.Itoa(len(body)))
		_, _ = bw.WriteString("\r\n")
	case m == http.MethodPost || m == http.MethodPut || m == http.MethodPatch:
		_, _ = bw.WriteString("Content-Length: 0\r\n")
	}
	if err := out.WriteSubset(w, relayExclude); err != nil {
		return err
	}
	_, _ = bw.WriteString("\r\n")
	_, err := w.Write(body)
	return err
}
