package proxy

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// h1Writer is the ResponseWriter of a request h1Server serves. It frames
// the answer as net/http's server does: a short answer of unknown length
// gets a Content-Length, a longer one is chunked, trailers follow a
// chunked body, Date and a sniffed Content-Type are added when missing,
// and the connection closes after an answer that did not end as it said.
type h1Writer struct {
	c      *h1Conn
	req    *http.Request
	cancel context.CancelFunc
	head   http.Header // the handler's
	sent   http.Header // as WriteHeader found it
	status int
	// committed: the status line and headers are in the connection's
	// buffer; pend holds what was written before, while it is short.
	committed bool
	pend      []byte
	cl        int64 // the declared Content-Length, -1 if none
	written   int64
	chunked   bool
	// closeAfter: the connection takes no further request.
	closeAfter bool
}

// h1Hold is how much of an answer of unknown length is held to be sent
// with a Content-Length, as net/http's bufferBeforeChunkingSize.
const h1Hold = 2 << 10

func (w *h1Writer) Header() http.Header { return w.head }

func (w *h1Writer) WriteHeader(code int) {
	if w.sent != nil {
		return
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		// An interim answer leaves at once, with the headers set so far.
		bw := w.c.bw
		writeStatusLine(bw, code)
		_ = w.head.WriteSubset(bw, noBodyHeaders)
		_, _ = bw.WriteString("\r\n")
		_ = bw.Flush()
		return
	}
	w.status, w.sent = code, w.head.Clone()
	if v := w.sent.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			w.cl = n
		} else {
			w.sent.Del("Content-Length")
		}
	}
}

// noBodyHeaders are not sent with an interim answer.
var noBodyHeaders = map[string]bool{"Content-Length": true, "Transfer-Encoding": true}

func (w *h1Writer) Write(p []byte) (int, error) {
	if w.sent == nil {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(len(p))
	if w.cl != -1 && w.written > w.cl {
		return 0, http.ErrContentLength
	}
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	if !w.committed {
		if w.cl == -1 && len(w.pend)+len(p) <= h1Hold {
			w.pend = append(w.pend, p...)
			return len(p), nil
		}
		w.commit(false, p)
	}
	return w.body(p)
}

// body writes p to the connection, as a chunk when chunked.
func (w *h1Writer) body(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	bw := w.c.bw
	if w.chunked {
		_, _ = bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		_, _ = bw.WriteString("\r\n")
	}
	n, err := bw.Write(p)
	if w.chunked && err == nil {
		_, err = bw.WriteString("\r\n")
	}
	return n, err
}

// commit writes the status line and headers, and what pend holds. done:
// the handler returned, so that the answer's length is known. first is
// the body's first bytes beyond pend, to sniff its type from.
func (w *h1Writer) commit(done bool, first []byte) {
	w.committed = true
	h, c := w.sent, w.c
	allowed := bodyAllowed(w.status)
	head := w.req.Method == http.MethodHead
	trailers := len(h["Trailer"]) > 0
	var exclude map[string]bool
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			trailers = true
			if exclude == nil {
				exclude = map[string]bool{}
			}
			exclude[k] = true
		}
	}
	if _, ok := h["Date"]; !ok {
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	if _, ok := h["Content-Type"]; !ok && allowed && !head {
		sniff := w.pend
		if len(sniff) == 0 {
			sniff = first
		}
		if len(sniff) > 0 {
			h.Set("Content-Type", http.DetectContentType(sniff))
		}
	}
	h.Del("Transfer-Encoding")
	switch {
	case !allowed || head:
		if done && head && w.cl == -1 && w.written > 0 && !trailers {
			h.Set("Content-Length", strconv.FormatInt(w.written, 10))
		}
	case w.cl != -1:
	case done && !trailers:
		w.cl = int64(len(w.pend))
		h.Set("Content-Length", strconv.Itoa(len(w.pend)))
	default:
		w.chunked = true
		h.Set("Transfer-Encoding", "chunked")
	}
	if w.req.Close || httpguts.HeaderValuesContainsToken(h["Connection"], "close") || c.s.closing.Load() {
		w.closeAfter = true
		h.Set("Connection", "close")
	}
	writeStatusLine(c.bw, w.status)
	_ = h.WriteSubset(c.bw, exclude)
	_, _ = c.bw.WriteString("\r\n")
	pend := w.pend
	w.pend = nil
	_, _ = w.body(pend)
}

// Flush sends what was written so far.
func (w *h1Writer) Flush() { _ = w.FlushError() }

// FlushError is Flush, with the connection's error.
func (w *h1Writer) FlushError() error {
	if w.sent == nil {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false, nil)
	}
	return w.c.bw.Flush()
}

// finish ends the answer as the handler returns: its headers if none
// left, the chunked body's end and trailers, all of it flushed.
func (w *h1Writer) finish() {
	if w.sent == nil {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(true, nil)
	}
	bw := w.c.bw
	if w.chunked {
		_, _ = bw.WriteString("0\r\n")
		_ = w.trailers().Write(bw)
		_, _ = bw.WriteString("\r\n")
	}
	if w.cl != -1 && w.written != w.cl && w.req.Method != http.MethodHead && bodyAllowed(w.status) {
		w.closeAfter = true // the client would wait for the rest
	}
	if bw.Flush() != nil {
		w.closeAfter = true
	}
}

// trailers are the fields the handler set after its headers under a name
// the Trailer header announced, or under http.TrailerPrefix.
func (w *h1Writer) trailers() http.Header {
	t := http.Header{}
	for _, v := range w.sent["Trailer"] {
		for _, k := range strings.Split(v, ",") {
			k = http.CanonicalHeaderKey(strings.TrimSpace(k))
			if vv, ok := w.head[k]; ok && httpguts.ValidTrailerHeader(k) {
				t[k] = vv
			}
		}
	}
	for k, vv := range w.head {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			t[http.CanonicalHeaderKey(name)] = vv
		}
	}
	return t
}

// EnableFullDuplex is http.ResponseController's: h1Server reads a body
// and writes an answer at once anyway.
func (w *h1Writer) EnableFullDuplex() error { return nil }

// SetReadDeadline is http.ResponseController's.
func (w *h1Writer) SetReadDeadline(t time.Time) error { return w.c.tc.SetReadDeadline(t) }

// SetWriteDeadline is http.ResponseController's.
func (w *h1Writer) SetWriteDeadline(t time.Time) error { return w.c.tc.SetWriteDeadline(t) }

// watchClient reads ahead on the connection while the request is held,
// so that a client that goes away ends it, as net/http's server does for
// every request (h1.go's header). It does not when the request's body is
// not read to its end: the read ahead would take the body's bytes.
func (w *h1Writer) watchClient() {
	c := w.c
	if c.watch != nil {
		return
	}
	if b, ok := w.req.Body.(*h1Body); ok && !b.done() {
		return
	}
	done := make(chan struct{})
	c.watch = done
	go func() {
		defer close(done)
		if _, err := c.br.Peek(1); err != nil && !c.aborting.Load() {
			w.cancel()
		}
	}()
}

// clientWatcher is h1Writer's watchClient, for hold.
type clientWatcher interface{ watchClient() }

func writeStatusLine(bw *bufio.Writer, code int) {
	if text := http.StatusText(code); text != "" {
		_, _ = bw.WriteString("HTTP/1.1 " + strconv.Itoa(code) + " " + text + "\r\n")
		return
	}
	_, _ = bw.WriteString("HTTP/1.1 " + strconv.Itoa(code) + " status code " + strconv.Itoa(code) + "\r\n")
}

// bodyAllowed reports whether an answer with status may have a body.
func bodyAllowed(status int) bool {
	return !(status >= 100 && status <= 199 || status == http.StatusNoContent || status == http.StatusNotModified)
}
