package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
)

// Strict HTTP/1 framing (docs/design/proxy-app.md, "Forwarding": framing). net/http's
// server is lenient where a front proxy must not be: it drops
// Content-Length beside Transfer-Encoding, ignores Transfer-Encoding on
// HTTP/1.0, takes bare LF and obs-fold, and with full duplex on (a streamed
// body) it keeps a connection whose chunked body was corrupt, so that what
// followed the fault is parsed as the next request. A framer watches the
// raw bytes of each HTTP/1 connection as net/http reads them, parses every
// request's head and body strictly, and stops the bytes at the first fault:
// net/http never parses a request from what follows, and the request at
// fault is answered 400 and the connection closed before it is routed.
//
// Written by hand: no maintained Go library parses HTTP/1 framing
// strictly (HAProxy and nginx each have their own parser too). It keeps no
// copy of the bytes and allocates nothing: a state machine over each read.

// errFraming ends the reads of a connection whose framing broke. net/http
// gets it as a read error (net.OpError "read"), which makes it close the
// connection without an answer of its own.
var (
	errFraming     = errors.New("proxy: the request's framing is broken")
	errFramingRead = &net.OpError{Op: "read", Net: "tcp", Err: errFraming}
)

// read reads from c into b, and passes on what the framing allows.
func (f *framer) read(c io.Reader, b []byte) (int, error) {
	if f.ph == phCut || f.poisoned.Load() {
		return 0, errFramingRead
	}
	n, err := c.Read(b)
	if n == 0 || f.ph == phAside {
		return n, err
	}
	if k := f.scan(b[:n]); k < n {
		if k == 0 {
			return 0, errFramingRead
		}
		return k, nil // the error on the next read
	}
	return n, err
}

// fault says why the next HTTP/1 request a handler sees on the connection
// must be refused, or "". Handlers call it once per request, in the
// connection's order.
func (f *framer) fault() string {
	if !f.on {
		return ""
	}
	i := f.served
	f.served++
	switch bad, up := f.bad.Load(), f.upgrade.Load(); {
	case bad > 0 && bad-1 <= i:
		return f.why
	case f.poisoned.Load():
		return faultBody
	case up > 0 && up-1 < i:
		return faultUpgrade
	}
	return ""
}

// framingBody watches a streamed body of an HTTP/1 request. With full
// duplex on, net/http keeps a connection whose body failed (its own checks
// of a chunked body, stricter than the framer's in places, or a timeout)
// or was left unread, and parses the next request from wherever its body
// reader stopped: a read that fails other than at the end ends the
// connection's parsing, and so does a body not read to its end by the
// time the handler returns (framingDone).
type framingBody struct {
	io.ReadCloser
	f *framer
}

func (b framingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.f.open.Store(false)
	case err != nil:
		b.f.poisoned.Store(true)
	}
	return n, err
}

// checkFraming answers r 400 and closes its connection when its framing
// is at fault (docs/design/proxy-app.md, "Forwarding": framing); false then. Every
// HTTP/1 request of a port passes here first, in order.
func checkFraming(w *writer, r *http.Request, rec Recorder) bool {
	tc := connOf(r)
	if tc == nil {
		return true
	}
	why := tc.f.fault()
	if why == "" {
		return true
	}
	w.Header().Set("Connection", "close")
	writeError(w, http.StatusBadRequest, "the request's framing is ambiguous: "+why+"; the connection is closed")
	rec.Request(ResultBadRequest)
	return false
}

// framingDone ends the parsing of r's connection, so that net/http
// closes it after the answer, when r's streamed body was not read to its
// end (framingBody), or when r asked for an upgrade that did not happen:
// the bytes after it were not parsed. It follows r's checkFraming.
func framingDone(r *http.Request) {
	tc := connOf(r)
	if tc == nil || !tc.f.on {
		return
	}
	if tc.f.open.Load() || tc.f.upgrade.Load() == tc.f.served && tc.g.Load() == nil {
		tc.f.poisoned.Store(true)
	}
}

// watchFraming wraps a streamed body of an HTTP/1 request (framingBody).
func watchFraming(r *http.Request) io.ReadCloser {
	if tc := connOf(r); tc != nil && tc.f.on {
		tc.f.open.Store(true)
		return framingBody{r.Body, &tc.f}
	}
	return r.Body
}

// optionsStar answers "OPTIONS *" as net/http's server would
// (Server.DisableGeneralOptionsHandler is set, so that every request
// reaches the handler and checkFraming counts it); true when it did.
func optionsStar(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodOptions || r.RequestURI != "*" {
		return false
	}
	w.Header().Set("Content-Length", "0")
	return true
}
