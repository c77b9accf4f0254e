package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// FuzzFraming sends the same bytes to two servers on loopback: one as
// the proxy runs its client port (the framer on its connections, h1Server's
// loop handing what it does not serve to net/http, the framing check in
// its handler, full duplex for bodies) and a reference (net/http alone,
// full duplex off, which closes a connection whose body broke).
// The requests the first one's handler gets must be a prefix of those the
// reference's gets, never more: the framer may refuse, never add.
func FuzzFraming(f *testing.F) {
	for _, tc := range framingCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabcOPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Add([]byte("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nPOST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n"))
	proxied := newRecordingServer(f, true)
	reference := newRecordingServer(f, false)
	f.Fuzz(func(t *testing.T, in []byte) {
		got := proxied.exchange(t, in)
		want := reference.exchange(t, in)
		if len(got) > len(want) {
			t.Fatalf("the proxy's handler got %d requests, the reference %d:\n%+v\n%+v", len(got), len(want), got, want)
		}
		for i, g := range got {
			if w := want[i]; g.line != w.line || g.whole && w.whole && g.body != w.body {
				t.Fatalf("request %d: the proxy's handler got %+v, the reference %+v", i, g, w)
			}
		}
	})
}

// received is a request a recording server's handler got.
type received struct {
	line  string // method and target
	body  string
	whole bool // the body was read to its end
}

// recordingServer is a net/http server on loopback whose handler records
// the requests of each connection.
type recordingServer struct {
	addr  string
	conns chan *connRecord
}

type recordKey struct{}

type connRecord struct {
	mu   sync.Mutex
	reqs []received
	done chan struct{}
}

func newRecordingServer(t testing.TB, framed bool) *recordingServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &recordingServer{addr: ln.Addr().String(), conns: make(chan *connRecord, 1)}
	records := map[net.Conn]*connRecord{}
	var mu sync.Mutex
	rec := newRec()
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Protocols:                    &protocols,
		DisableGeneralOptionsHandler: true,
		ReadHeaderTimeout:            patience,
		// A connection h1Server hands over is the same connection: its
		// record goes on.
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			key := net.Conn(trackedOf(c))
			if key == (*trackedConn)(nil) {
				key = c
			}
			mu.Lock()
			cr := records[key]
			if cr == nil {
				cr = &connRecord{done: make(chan struct{})}
				records[key] = cr
				s.conns <- cr
			}
			mu.Unlock()
			return context.WithValue(connContext(ctx, c), recordKey{}, cr)
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			key := net.Conn(trackedOf(c))
			if key == (*trackedConn)(nil) {
				key = c
			}
			if st == http.StateClosed || st == http.StateHijacked {
				mu.Lock()
				if cr := records[key]; cr != nil {
					close(cr.done)
					delete(records, key)
				}
				mu.Unlock()
			}
		},
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			w := &writer{ResponseWriter: rw}
			if framed {
				if !checkFraming(w, r, rec) {
					return
				}
				defer framingDone(r)
			}
			cr := r.Context().Value(recordKey{}).(*connRecord)
			if framed && hasBody(r) {
				_ = http.NewResponseController(rw).EnableFullDuplex()
				r.Body = watchFraming(r)
			}
			b, err := io.ReadAll(r.Body)
			cr.mu.Lock()
			cr.reqs = append(cr.reqs, received{line: r.Method + " " + r.RequestURI, body: string(b), whole: err == nil})
			cr.mu.Unlock()
		}),
	}
	if framed {
		l := newConnLimit(1<<10, true, rec, func() int64 { return time.Now().UnixNano() })
		l.framing = DefaultMaxHeaderBytes + 4<<10
		srv.MaxHeaderBytes = DefaultMaxHeaderBytes
		cl := l.listener(ln)
		h1, next := newH1Server(srv, cl, context.Background(), slog.New(slog.DiscardHandler))
		go func() { _ = h1.Serve(cl) }()
		t.Cleanup(func() { _ = h1.Close() })
		ln = next
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// exchange sends in on a new connection, ends its writing side, reads
// until the server closes it, and returns what the handler got.
func (s *recordingServer) exchange(t *testing.T, in []byte) []received {
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(patience))
	var cr *connRecord
	select {
	case cr = <-s.conns:
	case <-time.After(patience):
		t.Fatal("the server took no connection")
	}
	go func() {
		_, _ = c.Write(in)
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	var ne net.Error
	if _, err := io.Copy(io.Discard, c); errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept the connection open")
	}
	_ = c.Close()
	select {
	case <-cr.done:
	case <-time.After(patience):
		t.Fatal("the server did not close the connection")
	}
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return slices.Clone(cr.reqs)
}
