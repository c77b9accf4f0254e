package proxy

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// A connection to the application, watched for the one fact about a
// request that fails on it which proves the application never had it
// (docs/design/proxy.md, "Forwarding": what may be sent again): the application
// had closed the connection (its FIN, or a reset, had arrived) before the
// request's first byte was written. An application closes a kept-alive
// connection it no longer wants, between requests (Go's Server.Shutdown
// and every server's idle timeout do), and a server that has closed a
// connection takes no request from it: a fully closed socket does not
// read, and RFC 9112 (9.6) has a server that half-closes read only to
// discard while it tears the connection down. net/http's transport
// reports such a request as a failure like any other ("server closed idle
// connection", a reset, EOF) once it wrote it, and sends it again only
// when it is idempotent.

// past is a deadline that has passed: setting it unblocks a read or write
// at once, whatever the clock; zeroTime clears a deadline.
var (
	past     = time.Unix(1, 0)
	zeroTime time.Time
)

// appConn is a connection to the application. Before the first write of
// each request that is not safe to send twice (arm, at GotConn: one that is
// may be sent again anyway), it looks, without reading, whether the
// application's end is closed already.
type appConn struct {
	net.Conn
	raw syscall.RawConn
	// armed: the next write is a request's first; closedFirst: at that
	// write the application's end was closed already.
	armed, closedFirst atomic.Bool
	// peek and its results, made once: a peek allocates nothing.
	peek  func(fd uintptr)
	n     int
	err   error
	empty [1]byte
}

// dialApp is the transports' DialContext for the application: its TCP
// connections are appConns.
func dialApp(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		rt, ok := newRawTCP(c).(*rawTCP)
		if !ok {
			return c, nil
		}
		ac := &appConn{Conn: rt, raw: rt.rc}
		ac.peek = func(fd uintptr) {
			ac.n, ac.err = sysPeek(fd, ac.empty[:])
		}
		return ac, nil
	}
}

// arm says that the next write is the first of a request.
func (c *appConn) arm() {
	c.closedFirst.Store(false)
	c.armed.Store(true)
}

func (c *appConn) Write(b []byte) (int, error) {
	if c.armed.Swap(false) && c.peerClosed() {
		c.closedFirst.Store(true)
	}
	return c.Conn.Write(b)
}

// peerClosed reports that the application's end of the connection is
// closed: a peek, which neither waits nor takes a byte, finds the end of
// the stream or a reset. Called from Write alone: a connection carries one
// request at a time, and its writes are one goroutine's.
func (c *appConn) peerClosed() bool {
	if err := c.raw.Control(c.peek); err != nil {
		return false
	}
	return c.err == nil && c.n == 0 || errors.Is(c.err, syscall.ECONNRESET)
}

// idle reports that nothing is readable on the connection: the
// application neither closed it nor sent anything (a peek finds nothing
// yet). Called while no request is on the connection.
func (c *appConn) idle() bool {
	if err := c.raw.Control(c.peek); err != nil {
		return false
	}
	return errors.Is(c.err, syscall.EAGAIN)
}
