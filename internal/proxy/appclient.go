package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"time"
)

// A plain request to an HTTP/1.1 application, sent and answered on the
// handler's own goroutine (docs/design/proxy.md, "A hop's cost").
// net/http's Transport writes each request on a goroutine of the
// connection's and reads each answer on another, and hands both over
// through channels: three goroutine wake-ups a request, most of what a
// hop cost beyond HAProxy's on a loaded machine. A request without a body,
// or with a small one already here (attempt.oneWrite), and no Expect,
// upgrade or trailers, has nothing to do concurrently: appClient writes
// it and reads its answer where it is. The rest goes through the
// Transport, which streams a body while the answer comes. Both write with
// net/http's own Request.Write and read with its ReadResponse.

// appClient keeps alive HTTP/1.1 connections to the application for
// direct requests.
type appClient struct {
	addr    string
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	headers time.Duration // ResponseTimeout: the answer's headers are due within it
	idle    time.Duration // a kept-alive connection idle this long is closed
	maxIdle int           // idle connections kept at most
	maxHead int64         // an answer's headers take at most this many bytes

	mu     sync.Mutex
	free   []*clientConn // idle, the most recent last
	closed bool
}

// clientConn is one connection to the application.
type clientConn struct {
	c     net.Conn
	lr    limitReader // bounds an answer's headers, as the Transport's MaxResponseHeaderBytes
	br    *bufio.Reader
	bw    *bufio.Writer
	idleT *time.Timer // closes it when idle too long
}

func newAppClient(addr string, dial func(ctx context.Context, network, addr string) (net.Conn, error),
	headers, idle time.Duration, maxIdle int, maxHead int64) *appClient {
	return &appClient{addr: addr, dial: dial, headers: headers, idle: idle, maxIdle: maxIdle, maxHead: maxHead}
}

// direct reports whether req may go by appClient: nothing of it needs
// a goroutine of its own.
func direct(req *http.Request, inMemory bool) bool {
	noBody := req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0
	return (noBody || inMemory) && len(req.Trailer) == 0 && req.Header.Get("Expect") == "" && !isUpgrade(req.Header)
}

// roundTrip sends req and reads its answer's headers. The answer's body
// gives the connection back once read to its end. The request's
// httptrace hears of the connection (GotConn), of the request written
// and of interim answers, as from the Transport.
func (ac *appClient) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	return ac.send(ctx, httptrace.ContextClientTrace(ctx), req, req.Write, req.Close)
}

// send is roundTrip for a request that write writes (Request.Write, or
// relay's head and body), with trace's hooks; req is the request as
// ReadResponse sees it (its method), and closing says that the request
// asked to close the connection after its answer.
func (ac *appClient) send(ctx context.Context, trace *httptrace.ClientTrace, req *http.Request, write func(io.Writer) error, closing bool) (*http.Response, error) {
	cc, reused, err := ac.get(ctx)
	if err != nil {
		return nil, err
	}
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: cc.c, Reused: reused})
	}
	// An end of ctx (the client went away, the leadership ended, a stall)
	// unblocks whatever the connection waits for; it is not kept then.
	stop := context.AfterFunc(ctx, func() { _ = cc.c.SetDeadline(past) })
	err = write(cc.bw)
	if err == nil {
		err = cc.bw.Flush()
	}
	if trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{Err: err})
	}
	if err != nil {
		stop()
		_ = cc.c.Close()
		return nil, ac.failed(ctx, err)
	}
	if ac.headers > 0 {
		setReadDeadline(ctx, cc.c, time.Now().Add(ac.headers))
	}
	cc.lr.left = ac.maxHead
	var res *http.Response
	for {
		if res, err = http.ReadResponse(cc.br, req); err != nil {
			stop()
			_ = cc.c.Close()
			return nil, ac.failed(ctx, err)
		}
		if res.StatusCode < 100 || res.StatusCode > 199 || res.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		// An interim answer (103 Early Hints): relayed as the Transport
		// relays it, then the final one is read.
		if trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(res.StatusCode, textproto.MIMEHeader(res.Header)); err != nil {
				stop()
				_ = cc.c.Close()
				return nil, err
			}
		}
	}
	setReadDeadline(ctx, cc.c, zeroTime)
	cc.lr.left = math.MaxInt64
	if res.StatusCode == http.StatusSwitchingProtocols {
		// Not asked for (upgrades go by the Transport): not HTTP any more.
		stop()
		_ = cc.c.Close()
		return nil, errors.New("proxy: the application switched protocols unasked")
	}
	b := &appBody{ac: ac, cc: cc, stop: stop, res: res, keep: !res.Close && !closing}
	if res.Body == http.NoBody {
		b.end()
		return res, nil
	}
	b.rc, res.Body = res.Body, b
	return res, nil
}

// setReadDeadline sets c's read deadline to at, unless ctx has ended: the
// end's AfterFunc may have set the deadline in the past already, and at
// must not undo it.
func setReadDeadline(ctx context.Context, c net.Conn, at time.Time) {
	_ = c.SetReadDeadline(at)
	if ctx.Err() != nil {
		_ = c.SetDeadline(past)
	}
}

// failed is the error of a round trip that broke off: the cause of ctx
// when ctx ended it, else err (a timeout when the headers were late).
func (ac *appClient) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// get takes an idle connection whose application end is open and holds
// nothing unasked for, or dials one.
func (ac *appClient) get(ctx context.Context) (cc *clientConn, reused bool, err error) {
	for {
		ac.mu.Lock()
		if ac.closed {
			ac.mu.Unlock()
			return nil, false, errAppClientClosed
		}
		n := len(ac.free)
		if n == 0 {
			ac.mu.Unlock()
			break
		}
		cc = ac.free[n-1]
		ac.free[n-1] = nil
		ac.free = ac.free[:n-1]
		ac.mu.Unlock()
		if !cc.idleT.Stop() {
			continue // its idle timer closes it
		}
		if quiet(cc) {
			return cc, true, nil
		}
		_ = cc.c.Close()
	}
	c, err := ac.dial(ctx, "tcp", ac.addr)
	if err != nil {
		return nil, false, err
	}
	cc = &clientConn{c: c, lr: limitReader{r: c, left: math.MaxInt64}, bw: bufio.NewWriter(c)}
	cc.br = bufio.NewReader(&cc.lr)
	cc.idleT = time.AfterFunc(time.Hour, func() { ac.expire(cc) })
	cc.idleT.Stop()
	return cc, false, nil
}

var (
	// errHeadersTooLarge: the application's answer's headers passed maxHead.
	errHeadersTooLarge = errors.New("proxy: the application's answer's headers are larger than the limit")
	// errAppClientClosed: Serve has ended.
	errAppClientClosed = errors.New("proxy: the application's client is closed")
)

// limitReader reads from r until left bytes were read, then fails.
type limitReader struct {
	r    io.Reader
	left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errHeadersTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// quiet reports that an idle connection may carry a request: nothing is
// buffered from it, and the application neither closed it nor sent
// anything unasked for (appconn.go's peek, which neither waits nor reads).
func quiet(cc *clientConn) bool {
	if cc.br.Buffered() > 0 {
		return false
	}
	ap, ok := cc.c.(*appConn)
	if !ok {
		return true
	}
	return ap.idle()
}

// put keeps cc for the next request, or closes it.
func (ac *appClient) put(cc *clientConn) {
	ac.mu.Lock()
	if ac.closed || len(ac.free) >= ac.maxIdle {
		ac.mu.Unlock()
		_ = cc.c.Close()
		return
	}
	ac.free = append(ac.free, cc)
	cc.idleT.Reset(ac.idle)
	ac.mu.Unlock()
}

// expire closes cc, idle too long, unless it was taken meanwhile.
func (ac *appClient) expire(cc *clientConn) {
	ac.mu.Lock()
	for i, f := range ac.free {
		if f == cc {
			ac.free = append(ac.free[:i], ac.free[i+1:]...)
			ac.free = ac.free[:len(ac.free):len(ac.free)]
			break
		}
	}
	ac.mu.Unlock()
	_ = cc.c.Close()
}

// CloseIdleConnections closes the idle connections; the next request
// dials.
func (ac *appClient) CloseIdleConnections() {
	ac.mu.Lock()
	free := ac.free
	ac.free = nil
	ac.mu.Unlock()
	for _, cc := range free {
		cc.idleT.Stop()
		_ = cc.c.Close()
	}
}

// close closes the idle connections and keeps none from now on: the end
// of Serve.
func (ac *appClient) close() {
	ac.mu.Lock()
	ac.closed = true
	ac.mu.Unlock()
	ac.CloseIdleConnections()
}

// appBody is an answer's body on a clientConn: read to its end, the
// connection is kept (unless either side asked to close it); closed
// before, it is closed.
type appBody struct {
	ac   *appClient
	cc   *clientConn
	rc   io.ReadCloser
	stop func() bool
	res  *http.Response
	keep bool

	mu   sync.Mutex
	done bool
}

// inHand reports that body, an answer's from appClient, was read whole
// with its headers: nothing of it can arrive late.
func inHand(body io.ReadCloser) bool {
	if body == http.NoBody {
		return true
	}
	b, ok := body.(*appBody)
	return ok && b.res.ContentLength >= 0 && int64(b.cc.br.Buffered()) >= b.res.ContentLength
}

func (b *appBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.end()
	}
	return n, err
}

func (b *appBody) Close() error {
	b.mu.Lock()
	done := b.done
	b.done = true
	b.mu.Unlock()
	if !done {
		b.stop()
		_ = b.cc.c.Close()
	}
	return nil
}

// end is the end of the body, read whole: the connection goes back to
// the pool when it may carry another request.
func (b *appBody) end() {
	b.mu.Lock()
	done := b.done
	b.done = true
	b.mu.Unlock()
	if done {
		return
	}
	if b.stop() && b.keep {
		b.ac.put(b.cc)
		return
	}
	_ = b.cc.c.Close()
}
