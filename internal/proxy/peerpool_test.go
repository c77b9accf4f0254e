package proxy

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"

	"golang.org/x/net/http2"
)

// h2Peer is a peer's proxy reduced to its HTTP/2 frames (inside the
// peers' TLS): it answers the settings and pings, and meets every
// request with refuse.
func h2Peer(t *testing.T, refuse func(fr *http2.Framer, stream uint32)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pt, err := newPeerTLS(testPeerKey)
	if err != nil {
		t.Fatal(err)
	}
	ln = tls.NewListener(ln, pt.serverConfig(alpnH2))
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := io.ReadFull(c, make([]byte, len(http2.ClientPreface))); err != nil {
					return
				}
				fr := http2.NewFramer(c, c)
				_ = fr.WriteSettings()
				for {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					switch f := f.(type) {
					case *http2.SettingsFrame:
						if !f.IsAck() {
							_ = fr.WriteSettingsAck()
						}
					case *http2.PingFrame:
						if !f.IsAck() {
							_ = fr.WritePing(true, f.Data)
						}
					case *http2.HeadersFrame:
						refuse(fr, f.StreamID)
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// What HTTP/2 says was not processed (RFC 9113, 8.7: REFUSED_STREAM, a
// GOAWAY naming an earlier stream as the last) is told apart from what
// may have been: the resend rule's "unwritten".
func TestPeerPoolTellsUnprocessed(t *testing.T) {
	baseline(t)
	for _, tc := range []struct {
		name   string
		refuse func(fr *http2.Framer, stream uint32)
		want   bool
	}{
		{"REFUSED_STREAM", func(fr *http2.Framer, s uint32) { _ = fr.WriteRSTStream(s, http2.ErrCodeRefusedStream) }, true},
		{"GOAWAY before the stream", func(fr *http2.Framer, s uint32) { _ = fr.WriteGoAway(s-1, http2.ErrCodeNo, nil) }, true},
		{"reset after it was taken", func(fr *http2.Framer, s uint32) { _ = fr.WriteRSTStream(s, http2.ErrCodeInternal) }, false},
		{"GOAWAY that names the stream", func(fr *http2.Framer, s uint32) {
			_ = fr.WriteGoAway(s, http2.ErrCodeNo, nil)
			_ = fr.WriteRSTStream(s, http2.ErrCodeCancel)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := h2Peer(t, tc.refuse)
			tp := startProxy(t, newLead(following("b", 7, addr)), "127.0.0.1:1", Config{})
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+addr+"/", nil)
			a := &attempt{h: tp.http, to: TargetLeader}
			_, err := a.RoundTrip(req)
			if err == nil {
				t.Fatal("no error")
			}
			if got := isUnwritten(err); got != tc.want {
				t.Fatalf("%v: unwritten %v, want %v", err, got, tc.want)
			}
			if !a.conn.Load() || a.cc.Load() == nil {
				t.Fatal("the attempt did not record its connection")
			}
		})
	}
}
