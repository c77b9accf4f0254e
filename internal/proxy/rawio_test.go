package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// rawPair is a loopback TCP connection: a, wrapped in rawTCP, and its
// other end b, a plain *net.TCPConn.
func rawPair(t *testing.T) (a *rawTCP, b *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	other := recvConn(t, accepted)
	if other == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); other.Close() })
	r, ok := newRawTCP(c).(*rawTCP)
	if !ok {
		t.Fatalf("newRawTCP(%T) did not wrap it", c)
	}
	return r, other.(*net.TCPConn)
}

// rawTCP reads and writes as net's own conn does: whole writes past the
// socket's buffer (the poller waits for room), the end of the stream as
// io.EOF, a reset, a deadline and a close as the errors net reports.
func TestRawTCPReadsAndWritesAsNet(t *testing.T) {
	a, b := rawPair(t)

	// 8 MiB is far past both sockets' buffers: the write must wait for
	// room, repeatedly, while the other end reads slowly.
	big := bytes.Repeat([]byte("0123456789abcdef"), 512<<10)
	got := make(chan []byte, 1)
	go func() {
		var buf bytes.Buffer
		tmp := make([]byte, 64<<10)
		for buf.Len() < len(big) {
			time.Sleep(time.Millisecond)
			n, err := b.Read(tmp)
			buf.Write(tmp[:n])
			if err != nil {
				break
			}
		}
		got <- buf.Bytes()
	}()
	if n, err := a.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write of %d bytes: %d, %v", len(big), n, err)
	}
	if g := <-got; !bytes.Equal(g, big) {
		t.Fatalf("the other end read %d bytes, not the %d written, or other bytes", len(g), len(big))
	}

	// Reads: what is there, then nothing (the poller waits), then EOF.
	if n, err := a.Read(nil); n != 0 || err != nil {
		t.Errorf("Read(nil): %d, %v; want 0, nil", n, err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		_, _ = b.Write([]byte("late"))
		_ = b.CloseWrite()
	}()
	all, err := io.ReadAll(a)
	if string(all) != "late" || err != nil {
		t.Errorf("ReadAll: %q, %v; want \"late\", nil (io.EOF at the end)", all, err)
	}

	// A deadline: a timeout, as net.Error and as os.ErrDeadlineExceeded.
	a2, _ := rawPair(t)
	_ = a2.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err = a2.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read past its deadline: %v; want a timeout", err)
	}

	// A reset by the other end.
	a3, b3 := rawPair(t)
	_ = b3.SetLinger(0)
	_ = b3.Close()
	time.Sleep(20 * time.Millisecond)
	if _, err := a3.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("Read after a reset: %v; want ECONNRESET", err)
	}

	// Its own close.
	a4, _ := rawPair(t)
	_ = a4.Close()
	if _, err := a4.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close: %v; want net.ErrClosed", err)
	}
	if _, err := a4.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close: %v; want net.ErrClosed", err)
	}
}
