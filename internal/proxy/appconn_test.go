package proxy

import (
	"context"
	"net"
	"testing"
	"time"
)

// A request's first write finds out whether the application had closed the
// connection before it (its FIN or a reset had arrived): then the request
// provably never reached it. A connection the application keeps open says
// nothing, and only the first write after arm looks.
func TestAppConnSeesTheApplicationCloseFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := dialApp(&net.Dialer{Timeout: time.Second})
	open := func() (*appConn, net.Conn) {
		c, err := dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		ac, ok := c.(*appConn)
		if !ok {
			t.Fatalf("dialApp gave %T, want *appConn", c)
		}
		return ac, recvConn(t, accepted)
	}

	kept, app := open()
	defer app.Close()
	kept.arm()
	if _, err := kept.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil || kept.closedFirst.Load() {
		t.Fatalf("a connection the application keeps: write %v, closed first %v", err, kept.closedFirst.Load())
	}

	closing, app2 := open()
	app2.Close() // the application closes an idle connection (FIN)
	waitFor(t, "the FIN", closing.peerClosed)
	closing.arm()
	_, _ = closing.Write([]byte("POST / HTTP/1.1\r\n\r\n"))
	if !closing.closedFirst.Load() {
		t.Fatal("a request written after the application closed the connection: not seen as closed first")
	}
	closing.closedFirst.Store(false)
	_, _ = closing.Write([]byte("body")) // not armed: the same request's later write does not look
	if closing.closedFirst.Load() {
		t.Fatal("a write that is not a request's first looked")
	}
}

func recvConn(t *testing.T, ch <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(patience):
		t.Fatal("timed out waiting for the application to accept")
		return nil
	}
}
