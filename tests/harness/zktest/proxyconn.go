package zktest

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// proxyConn is one client connection and, once dialled, its server connection.
type proxyConn struct {
	p      *Proxy
	client net.Conn
	ctx    context.Context // cancelled by abort
	cancel context.CancelFunc

	mu     sync.Mutex
	server net.Conn
	cut    bool // DropAfterCreate fired: discard server bytes

	// Touched only by the client-to-server pump.
	frames  frameParser
	rewrite *electionRewriter
}

func (c *proxyConn) run() {
	defer c.p.wg.Done()
	defer func() {
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	}()
	if !c.p.waitForward(c.ctx) {
		c.abort()
		return
	}
	s, err := c.dial()
	if err != nil {
		c.abort() // like a refused connection
		return
	}
	c.mu.Lock()
	c.server = s
	c.mu.Unlock()
	if c.ctx.Err() != nil { // aborted while dialling
		c.abort()
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.pumpServerToClient(s)
	}()
	c.pumpClientToServer(s)
	wg.Wait()
	// Both directions ended (FINs passed on, or an abort): close without an RST so that
	// bytes still in flight reach their reader.
	c.cancel()
	_ = c.client.Close()
	_ = s.Close()
}

// dial connects to the target, retrying for the proxy's dialRetry while it refuses.
func (c *proxyConn) dial() (net.Conn, error) {
	c.p.mu.Lock()
	deadline := time.Now().Add(c.p.dialRetry)
	c.p.mu.Unlock()
	d := net.Dialer{Timeout: dialTimeout}
	for {
		s, err := d.DialContext(c.ctx, "tcp", c.p.target)
		if err == nil || c.ctx.Err() != nil || time.Now().After(deadline) {
			return s, err
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return nil, c.ctx.Err()
		}
	}
}

// abort closes both sides with an RST (SO_LINGER 0). Idempotent.
func (c *proxyConn) abort() {
	c.cancel()
	c.mu.Lock()
	s := c.server
	c.mu.Unlock()
	abortConn(c.client)
	if s != nil {
		abortConn(s)
	}
}

func abortConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		return
	}
	_ = c.Close()
}

func (c *proxyConn) pumpClientToServer(s net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.client.Read(buf)
		if n > 0 {
			if !c.p.waitForward(c.ctx) {
				c.abort()
				return
			}
			out, cut, creates, requests := c.filter(buf[:n])
			if cut {
				// Marked before the write: from here a failed write to the
				// client (a test may reset it as soon as the create is
				// counted) no longer aborts the server side, which would
				// reset the server before it read the create.
				c.mu.Lock()
				c.cut = true
				c.mu.Unlock()
			}
			if len(out) > 0 {
				if _, werr := s.Write(out); werr != nil {
					c.abort()
					return
				}
			}
			// Counted once written: a test that waits for the count acts on
			// a request the server has been sent.
			c.p.count(creates, requests)
			if cut {
				// The create reached the server: the client must never see its reply.
				abortConn(c.client)
				closeWrite(s)
				return
			}
		}
		if err != nil {
			if !c.p.waitForward(c.ctx) {
				c.abort()
				return
			}
			if errors.Is(err, io.EOF) {
				closeWrite(s) // pass the client's FIN on; the server side may still answer
				return
			}
			c.abort()
			return
		}
	}
}

// held is what the server sent, read at one time: bytes, or the error that
// ended the reading (io.EOF: the server's FIN).
type held struct {
	due time.Time // when the client may have it (Proxy.Delay)
	b   []byte
	err error
}

// pumpServerToClient reads what the server sends and hands it to deliver,
// which passes it on once Proxy.Delay allows: reading goes on meanwhile, so
// each byte is held for the delay and no longer.
func (c *proxyConn) pumpServerToClient(s net.Conn) {
	queue := make(chan held, 64)
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		c.deliver(queue)
	}()
	defer func() {
		close(queue)
		<-delivered
	}()
	push := func(h held) bool {
		select {
		case queue <- h:
			return true
		case <-c.ctx.Done():
			return false
		}
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if c.isCut() {
			if err != nil {
				return // the server closed after our FIN: done (run aborts what is left)
			}
			continue // discard the reply to the dropped create and anything after it
		}
		due := time.Now().Add(c.p.delayNow())
		if n > 0 && !push(held{due: due, b: append([]byte(nil), buf[:n]...)}) {
			return
		}
		if err != nil {
			push(held{due: due, err: err})
			return
		}
	}
}

// deliver writes what the server sent to the client, each piece at its due
// time and once the proxy forwards, and passes the server's FIN on after
// the rest.
func (c *proxyConn) deliver(queue <-chan held) {
	for h := range queue {
		if wait := time.Until(h.due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
				return
			}
		}
		if !c.p.waitForward(c.ctx) {
			c.abort()
			return
		}
		switch {
		case errors.Is(h.err, io.EOF):
			closeWrite(c.client)
			return
		case h.err != nil:
			c.abort()
			return
		}
		if _, werr := c.client.Write(h.b); werr != nil && !c.isCut() {
			c.abort()
			return
		}
	}
}

func (c *proxyConn) isCut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}

// filter applies the election rewrite and the ZooKeeper frame accounting to bytes going
// from the client to the server. It returns what to forward, whether to cut the
// connection right after it, and the creates and requests it holds (for Counts).
func (c *proxyConn) filter(b []byte) (out []byte, cut bool, creates, requests int) {
	out = b
	if c.rewrite != nil {
		var done bool
		out, done = c.rewrite.feed(b)
		if done {
			c.rewrite = nil
		}
		return out, false, 0, 0 // election connections carry no client frames
	}
	res := c.frames.feed(out, c.p.takeDrop)
	if res.cutAt >= 0 {
		return out[:res.cutAt], true, res.creates, res.requests
	}
	return out, false, res.creates, res.requests
}
