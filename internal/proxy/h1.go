package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// The client port's own HTTP/1.1 serve loop (docs/design/proxy.md, "A
// hop's cost"). net/http's server starts a goroutine per request that
// reads ahead on the connection, to notice a client that goes away, and
// wakes the connection's goroutine when it stops it: most of what a hop
// costs beyond HAProxy's. h1Server serves each connection on one
// goroutine, a request at a time, and reads ahead only while a request
// is held (h1Writer.watchClient). It serves plain requests only: HTTP/1.1
// with a Content-Length body or none, no Expect, upgrade, trailers or
// absolute form. At the first request that is not plain, or that it
// cannot parse, it hands the connection to net/http's server, which
// parses that request again from its first byte (h1Source keeps them)
// and serves the connection from then on. So everything unusual, and
// every error answer of the parser, stays net/http's; the framer checks
// both alike, below them.
//
// Written by hand: net/http serves a connection only through its own
// loop, and no maintained library serves HTTP/1.1 into an http.Handler
// without a goroutine per request.

// h1Server serves the client port's connections (h1Conn), and gives
// those it does not serve to net/http through handoffs.
type h1Server struct {
	h       http.Handler
	next    *handoffs
	state   func(net.Conn, http.ConnState)
	connCtx func(context.Context, net.Conn) context.Context
	base    context.Context
	log     *slog.Logger
	maxHead int64         // a request's head takes at most this many bytes, as net/http's
	header  time.Duration // ReadHeaderTimeout
	idle    time.Duration // IdleTimeout

	closing atomic.Bool
	mu      sync.Mutex
	ln      net.Listener
	conns   map[*h1Conn]struct{}
}

// newH1Server serves ln's plain requests as srv would, and hands srv
// the rest through the listener it returns, for srv.Serve.
func newH1Server(srv *http.Server, ln net.Listener, base context.Context, log *slog.Logger) (*h1Server, net.Listener) {
	next := newHandoffs(ln.Addr())
	maxHead := srv.MaxHeaderBytes
	if maxHead <= 0 {
		maxHead = http.DefaultMaxHeaderBytes
	}
	return &h1Server{h: srv.Handler, next: next, state: srv.ConnState, connCtx: srv.ConnContext, base: base, log: log,
		maxHead: int64(maxHead) + 4<<10, header: srv.ReadHeaderTimeout, idle: srv.IdleTimeout}, next
}

// A connection's phases, for Shutdown: only one that waits for a request
// is closed under it.
const (
	h1New int32 = iota
	h1Idle
	h1Active
)

// h1Conn is one client connection while h1Server serves it.
type h1Conn struct {
	s      *h1Server
	tc     *trackedConn
	src    h1Source
	br     *bufio.Reader
	bw     *bufio.Writer
	ctx    context.Context // the connection's: connOf finds tc in it
	remote string
	phase  atomic.Int32
	since  time.Time // accepted
	post   bool      // the last request was a POST
	// watch is the read ahead of a held request (h1Writer.watchClient):
	// it ends when stopped (aborting) or when it read a byte or an error.
	watch    chan struct{}
	aborting atomic.Bool
}

// Serve accepts connections on ln until Shutdown or Close.
func (s *h1Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	if s.closing.Load() {
		_ = ln.Close()
		return http.ErrServerClosed
	}
	var pause time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Out of descriptors or the like: as net/http, wait and retry.
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				time.Sleep(pause)
				continue
			}
			return err
		}
		pause = 0
		tc, ok := c.(*trackedConn)
		if !ok {
			s.next.give(c) // not counted: net/http serves it as it is
			continue
		}
		hc := &h1Conn{s: s, tc: tc, since: time.Now(), remote: tc.RemoteAddr().String()}
		hc.src.tc = tc
		hc.ctx = s.connCtx(s.base, tc)
		s.mu.Lock()
		if s.conns == nil {
			s.conns = map[*h1Conn]struct{}{}
		}
		s.conns[hc] = struct{}{}
		s.mu.Unlock()
		s.state(tc, http.StateNew) // here, so that the idle keep the order they came in
		go hc.serve()
	}
}

// Shutdown stops accepting, closes connections as they wait for a
// request, and returns when none is left or ctx ends, as net/http's does.
func (s *h1Server) Shutdown(ctx context.Context) error {
	s.stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.closeIdle() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Close stops accepting and closes every connection it serves.
func (s *h1Server) Close() error {
	s.stop()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.tc.Close()
	}
	s.mu.Unlock()
	return nil
}

func (s *h1Server) stop() {
	s.closing.Store(true)
	s.mu.Lock()
	if s.ln != nil {
		_ = s.ln.Close()
	}
	s.mu.Unlock()
}

// closeIdle closes the connections that wait for a request (a new one
// after 5 s, as net/http), and reports whether none is left.
func (s *h1Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if ph := c.phase.Load(); ph == h1Idle || ph == h1New && time.Since(c.since) > 5*time.Second {
			_ = c.tc.Close()
		}
	}
	return len(s.conns) == 0
}

func (s *h1Server) done(c *h1Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

var (
	h1Readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	h1Writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

// serve serves c's requests in turn until one is not plain (handed to
// net/http), c closes, or it should close.
func (c *h1Conn) serve() {
	s, tc := c.s, c.tc
	defer s.done(c)
	c.br, c.bw = h1Readers.Get().(*bufio.Reader), h1Writers.Get().(*bufio.Writer)
	c.br.Reset(&c.src)
	c.bw.Reset(tc)
	defer func() {
		c.br.Reset(nil)
		c.bw.Reset(nil)
		h1Readers.Put(c.br)
		h1Writers.Put(c.bw)
	}()
	for first := true; ; first = false {
		if !first {
			c.phase.Store(h1Idle)
			s.state(tc, http.StateIdle)
			if s.closing.Load() {
				c.close()
				return
			}
			if s.idle > 0 {
				_ = tc.SetReadDeadline(time.Now().Add(s.idle))
			}
			if _, err := c.br.Peek(1); err != nil {
				c.close()
				return
			}
		}
		req, replay, ok := c.read()
		if !ok {
			c.close()
			return
		}
		if req == nil {
			s.next.give(&replayConn{trackedConn: tc, pending: replay})
			return
		}
		c.phase.Store(h1Active)
		s.state(tc, http.StateActive)
		if !c.serveOne(req) {
			c.close()
			return
		}
	}
}

func (c *h1Conn) close() {
	_ = c.tc.Close()
	c.s.state(c.tc, http.StateClosed)
}

// read reads the next request's head: the request when it is plain;
// nil and the bytes read since the request's start when net/http is to
// parse it; false when the connection failed or timed out, which
// net/http would close without an answer.
func (c *h1Conn) read() (*http.Request, []byte, bool) {
	s, src := c.s, &c.src
	if s.header > 0 {
		_ = c.tc.SetReadDeadline(time.Now().Add(s.header))
	}
	// The request starts with what is buffered: kept, with what is read
	// from here on, until the request is known to be plain.
	saved, _ := c.br.Peek(c.br.Buffered())
	src.start(saved, s.maxHead-int64(len(saved)))
	skip := 0
	if c.post {
		// RFC 9112 section 2.2: a server may ignore CRLF before a
		// request; net/http does after a POST.
		p, _ := c.br.Peek(4)
		for skip < len(p) && (p[skip] == '\r' || p[skip] == '\n') {
			skip++
		}
		_, _ = c.br.Discard(skip)
	}
	req, err := http.ReadRequest(c.br)
	kept := src.end()
	switch {
	case err == nil && plain(req):
		_ = c.tc.SetReadDeadline(time.Time{})
		return req, nil, true
	case err != nil && src.err != nil:
		return nil, nil, false
	}
	return nil, kept[skip:], true
}

// plain reports whether h1Server serves req itself: net/http's server
// would take it (its checks of the Host and of header fields), and it
// needs nothing but a request and an answer (h1.go's header).
func plain(req *http.Request) bool {
	if req.ProtoMajor != 1 || req.ProtoMinor != 1 || req.Method == http.MethodConnect ||
		len(req.RequestURI) == 0 || req.RequestURI[0] != '/' ||
		len(req.TransferEncoding) > 0 || req.Trailer != nil || req.ContentLength < 0 {
		return false
	}
	h := req.Header // ReadRequest moved the Host header to req.Host
	if req.Host == "" || !httpguts.ValidHostHeader(req.Host) {
		return false
	}
	if _, ok := h["Expect"]; ok {
		return false
	}
	if _, ok := h["Upgrade"]; ok {
		return false
	}
	for k, vv := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// serveOne runs the handler for req and finishes its answer; true when
// the connection may take another request.
func (c *h1Conn) serveOne(req *http.Request) (keep bool) {
	s := c.s
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	req = req.WithContext(ctx)
	req.RemoteAddr = c.remote
	c.post = req.Method == http.MethodPost
	var body *h1Body
	if req.Body != nil && req.Body != http.NoBody {
		body = &h1Body{rc: req.Body, left: req.ContentLength}
		req.Body = body
	}
	w := &h1Writer{c: c, req: req, cancel: cancel, head: make(http.Header), cl: -1}
	defer func() {
		if v := recover(); v != nil {
			// An answer broken off (ReverseProxy's ErrAbortHandler): what
			// was written goes, unfinished, and the connection closes.
			if v != http.ErrAbortHandler {
				s.log.Error("the client port's handler panicked", "panic", v)
			}
			c.stopWatch()
			_ = c.bw.Flush()
			keep = false
		}
	}()
	s.h.ServeHTTP(w, req)
	c.stopWatch()
	w.finish()
	if body != nil && !c.drain(body) {
		// What is left of the body cannot be parsed past: the client
		// reads the answer before the close resets the connection.
		if cw, ok := c.tc.Conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
			time.Sleep(500 * time.Millisecond)
		}
		return false
	}
	return !w.closeAfter && !s.closing.Load()
}

// stopWatch ends the read ahead of a held request, if one runs; a byte it
// read stays in br for the next request.
func (c *h1Conn) stopWatch() {
	if c.watch == nil {
		return
	}
	c.aborting.Store(true)
	_ = c.tc.SetReadDeadline(past)
	<-c.watch
	_ = c.tc.SetReadDeadline(time.Time{})
	c.aborting.Store(false)
	c.watch = nil
}

// h1Source is what a connection's bufio.Reader reads from: the
// connection, whose bytes it keeps while a request's head is parsed, so
// that net/http can parse it again, and whose head it bounds.
type h1Source struct {
	tc   *trackedConn
	keep bool
	kept []byte // reused from request to request
	left int64  // bytes a head may still take, while keep
	err  error  // the connection's read error while keep
}

func (s *h1Source) start(saved []byte, left int64) {
	s.keep, s.kept, s.left, s.err = true, append(s.kept[:0], saved...), left, nil
}

// end stops keeping, and returns what was kept, valid until the next start.
func (s *h1Source) end() []byte {
	s.keep = false
	return s.kept
}

func (s *h1Source) Read(p []byte) (int, error) {
	if !s.keep {
		return s.tc.Read(p)
	}
	if s.left <= 0 {
		return 0, io.EOF // the head is too large: net/http answers 431
	}
	if int64(len(p)) > s.left {
		p = p[:s.left]
	}
	n, err := s.tc.Read(p)
	s.left -= int64(n)
	s.kept = append(s.kept, p[:n]...)
	if err != nil {
		s.err = err
	}
	return n, err
}

// h1Body is a request's body: read by the handler, or by a Transport's
// goroutine after the handler returned, until drain ends it under mu.
type h1Body struct {
	mu     sync.Mutex
	rc     io.ReadCloser
	left   int64 // bytes still to come
	eof    bool
	closed bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *h1Body) Close() error { return nil }

func (b *h1Body) done() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eof
}

// maxDrain is how much of a body the handler left unread is read past to
// keep the connection, as net/http's server.
const maxDrain = 256 << 10

// drain reads what the handler left of b, when it is at most maxDrain,
// within the header timeout, and reports whether the next request can be
// parsed after it.
func (c *h1Conn) drain(b *h1Body) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	switch {
	case b.eof:
		return true
	case b.left > maxDrain:
		return false
	}
	if c.s.header > 0 {
		_ = c.tc.SetReadDeadline(time.Now().Add(c.s.header))
		defer func() { _ = c.tc.SetReadDeadline(time.Time{}) }()
	}
	_, err := io.Copy(io.Discard, b.rc)
	return err == nil
}

// handoffs is the listener of net/http's server on the client port: the
// connections h1Server gives it.
type handoffs struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newHandoffs(addr net.Addr) *handoffs {
	return &handoffs{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *handoffs) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffs) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffs) Addr() net.Addr { return l.addr }

// give hands c to net/http's server, or closes it once that has stopped.
func (l *handoffs) give(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		_ = c.Close()
	}
}

// replayConn is a connection handed to net/http: it reads first what
// h1Server had read of the request, then the connection.
type replayConn struct {
	*trackedConn
	pending []byte
}

func (r *replayConn) Read(b []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(b, r.pending)
		r.pending = r.pending[n:]
		return n, nil
	}
	return r.trackedConn.Read(b)
}

// trackedOf is the counted connection under c, as net/http has it.
func trackedOf(c net.Conn) *trackedConn {
	switch c := c.(type) {
	case *trackedConn:
		return c
	case *replayConn:
		return c.trackedConn
	}
	return nil
}
