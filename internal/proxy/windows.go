package proxy

import "net/http"

// HTTP/2 flow control between the proxies (docs/design/proxy-app.md, "Forwarding":
// bounds). What a receiver holds unread is what its windows let the sender
// send. x/net's defaults (4 MiB a stream, 1 GiB a connection at the
// transport) let each client of a follower that reads nothing of a large
// answer make the follower hold 4 MiB. The windows are sized from the
// proxy's buffers instead: a stalled answer or forwarded body holds one
// small window, besides the relay buffer it holds at the leader too. Every
// stream of a connection may fill its window, so a slow reader never
// stalls the other forwards that share its connection.

// peerStreamWindow is a stream's receive window, at most BufferSize: one
// DATA frame of the size every HTTP/2 peer takes (RFC 9113,
// SETTINGS_MAX_FRAME_SIZE's initial value). A forward then moves at most
// this much per round trip: 16 KiB in 0.5 ms is 32 MB/s between nodes.
const peerStreamWindow = 16 << 10

// maxConnsPerPeer bounds the connections to one peer's proxy: a second
// one when the first is at its stream cap or going away.
const maxConnsPerPeer = 2

// peerWindows is the HTTP/2 configuration of both ends of a peer
// connection: the transport of peerPool (streams: PeerStreams) and the
// server on PeerListen. A connection's window is room for every stream it
// carries, at most half of BufferTotal (maxConnsPerPeer connections to a
// peer). A follower so holds at most maxConnsPerPeer x PeerStreams stream
// windows for the leader's answers: 8 MiB with the defaults.
func peerWindows(cfg Config, streams int) *http.HTTP2Config {
	stream := min(peerStreamWindow, cfg.BufferSize)
	conn := min(int64(stream)*int64(streams), cfg.BufferTotal/maxConnsPerPeer)
	return &http.HTTP2Config{MaxConcurrentStreams: streams,
		MaxReceiveBufferPerStream: stream, MaxReceiveBufferPerConnection: int(max(conn, int64(stream)))}
}
