package proxy

import (
	"io"
	"net"
	"testing"

	"golang.org/x/net/http2"
)

// The windows between proxies follow the proxy's buffers: a relay buffer
// a stream at most (never more than BufferSize), and room for every
// stream of a connection, within half of BufferTotal.
func TestPeerWindows(t *testing.T) {
	for _, tc := range []struct {
		name               string
		cfg                Config
		stream, conn, nmax int
	}{
		{"defaults", Config{}, 16 << 10, DefaultPeerStreams * 16 << 10, DefaultPeerStreams},
		{"a small buffer_size", Config{BufferSize: 4 << 10}, 4 << 10, DefaultPeerStreams * 4 << 10, DefaultPeerStreams},
		{"a small buffer_total", Config{BufferSize: 4 << 10, BufferTotal: 64 << 10}, 4 << 10, 32 << 10, DefaultPeerStreams},
		{"one stream", Config{PeerStreams: 1}, 16 << 10, 16 << 10, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Listen, cfg.PeerListen, cfg.App, cfg.PeerKey = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:1", testPeerKey
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			cfg = cfg.withDefaults()
			h2 := peerWindows(cfg, cfg.PeerStreams)
			if h2.MaxReceiveBufferPerStream != tc.stream || h2.MaxReceiveBufferPerConnection != tc.conn || h2.MaxConcurrentStreams != tc.nmax {
				t.Fatalf("stream %d, connection %d, streams %d; want %d, %d, %d", h2.MaxReceiveBufferPerStream,
					h2.MaxReceiveBufferPerConnection, h2.MaxConcurrentStreams, tc.stream, tc.conn, tc.nmax)
			}
		})
	}
}

// windows reads what an HTTP/2 endpoint announces first: its stream
// window (SETTINGS) and its connection window (65,535 + the WINDOW_UPDATE
// that follows).
func windows(t *testing.T, fr *http2.Framer) (stream, conn uint32) {
	t.Helper()
	stream, conn = 65535, 65535
	for seen := 0; seen < 2; {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
				stream = v
			}
			seen++
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				conn += f.Increment
				seen++
			}
		}
	}
	return stream, conn
}

// Both ends of a peer connection announce those windows: the transport
// that receives the leader's answers, and the server on PeerListen that
// receives forwarded bodies.
func TestPeerWindowsOnTheWire(t *testing.T) {
	baseline(t)
	tp := startProxy(t, newLead(leading("b", 7)), "127.0.0.1:1", Config{})
	want := peerWindows(tp.cfg, tp.cfg.PeerStreams)

	// The server, inside the peers' TLS (ALPN h2) as the peer pool speaks.
	c, err := dialPeerTLS(t, tp.peer, testPeerKey, alpnH2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	if s, cn := windows(t, fr); int(s) != want.MaxReceiveBufferPerStream || int(cn) != want.MaxReceiveBufferPerConnection {
		t.Errorf("the peer server announces %d a stream, %d the connection; want %d, %d", s, cn,
			want.MaxReceiveBufferPerStream, want.MaxReceiveBufferPerConnection)
	}

	// The transport.
	client, server := net.Pipe()
	defer server.Close()
	go func() {
		if cc, err := tp.http.pool.t.NewClientConn(client); err == nil {
			defer cc.Close()
			_ = cc.Ping(t.Context())
		}
	}()
	if _, err := io.ReadFull(server, make([]byte, len(http2.ClientPreface))); err != nil {
		t.Fatal(err)
	}
	// x/net's transport adds its connection window to HTTP/2's initial one.
	if s, cn := windows(t, http2.NewFramer(server, server)); int(s) != want.MaxReceiveBufferPerStream || int(cn) != want.MaxReceiveBufferPerConnection+65535 {
		t.Errorf("the peer transport announces %d a stream, %d the connection; want %d, %d", s, cn,
			want.MaxReceiveBufferPerStream, want.MaxReceiveBufferPerConnection)
	}
}
