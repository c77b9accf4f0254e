package zksession

import (
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// dial connects to one ZooKeeper server, over TLS when configured, and
// wraps the connection to read the negotiated session timeout from the
// ConnectResponse, which go-zookeeper does not expose, and to bound the
// handshake (handshakeTimeout).
func (s *Session) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		s.dialFailed(address, err)
		return nil, err
	}
	// Socket deadlines are wall-clock instants the kernel checks, not
	// waits of ours: they come from package time, not the Clock.
	handshakeBy := time.Now().Add(s.handshakeTimeout())
	if s.cfg.TLS != nil {
		tc := tls.Client(c, s.tlsConfig(address))
		_ = tc.SetDeadline(handshakeBy)
		if err := tc.Handshake(); err != nil {
			c.Close()
			s.dialFailed(address, fmt.Errorf("tls: %w", err))
			return nil, err
		}
		_ = tc.SetDeadline(time.Time{})
		c = tc
	}
	return &sniffConn{Conn: c, s: s, handshakeBy: handshakeBy}, nil
}

// tlsConfig is the configured TLS for one server: the server's certificate
// must name the host as configured (zookeeper.servers) unless
// zookeeper.tls_server_name says otherwise. address is the resolved
// ip:port the host provider handed out.
func (s *Session) tlsConfig(address string) *tls.Config {
	cfg := s.cfg.TLS.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(s.hosts.hostOf(address))
		if err != nil {
			host, _, _ = net.SplitHostPort(address)
		}
		cfg.ServerName = host
	}
	return cfg
}

// dialWarnEvery paces the warnings about servers that cannot be reached.
const dialWarnEvery = 30 * time.Second

// dialFailed warns that a server cannot be reached: at once for the first
// failure since the last session was established, then at most once per
// dialWarnEvery. An operator whose electd has no view of the election sees
// why at the default log level. The counts run from the last session
// (onEvent resets them): attempts_since_success is every failed attempt,
// down_for the time since the first (each warning once counted only the
// attempts since the one before: 30 at each, every 30 s).
func (s *Session) dialFailed(address string, err error) {
	now := s.clock.Now()
	s.mu.Lock()
	if s.dialFailures == 0 {
		s.dialDownFrom = now
	}
	s.dialFailures++
	n, downFor := s.dialFailures, now.Sub(s.dialDownFrom)
	due := s.lastDialWarn.IsZero() || now.Sub(s.lastDialWarn) >= dialWarnEvery
	if due {
		s.lastDialWarn = now
	}
	s.mu.Unlock()
	if due {
		s.log.Warn("cannot reach zookeeper server; retrying", "server", address, "err", err,
			"attempts_since_success", n, "down_for", downFor.Round(time.Second))
	}
}

// handshakeTimeout bounds the wait for a server's ConnectResponse, as the
// Java client does (session timeout / number of servers), and to a third of
// the session timeout (at least 1 s). go-zookeeper waits 10 × 2/3 of the
// session timeout: a server that accepts connections but does not answer (a
// long GC pause, a stalled disk) held electd for 6.7 session timeouts before
// it tried the next server. The third: a server that is up answers in
// milliseconds, and one that took the connection while it was starting (a
// standalone server restarted) must leave time to try again before the
// session expires, even when it is the only one (the Java client's bound
// alone spent the whole session timeout there, and the session expired).
func (s *Session) handshakeTimeout() time.Duration {
	d := s.cfg.SessionTimeout / time.Duration(max(len(s.cfg.Servers), 1))
	return max(min(d, s.cfg.SessionTimeout/3), time.Second)
}

// sniffConn parses the first frame read from a new connection (the
// ConnectResponse): a 4-byte length, then protocolVersion int32, timeOut
// int32, sessionId int64, ... It is parsed before go-zookeeper announces the
// session, so the callback sees both values. Until then, it caps the
// deadlines go-zookeeper sets at handshakeBy.
type sniffConn struct {
	net.Conn
	s           *Session
	handshakeBy time.Time
	head        []byte
	done        atomic.Bool
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done.Load() && n > 0 {
		need := 20 - len(c.head)
		if need > n {
			need = n
		}
		c.head = append(c.head, p[:need]...)
		if len(c.head) >= 20 {
			c.s.negotiatedMs.Store(int64(int32(binary.BigEndian.Uint32(c.head[8:12]))))
			c.s.negotiatedID.Store(int64(binary.BigEndian.Uint64(c.head[12:20])))
			c.done.Store(true)
		}
	}
	return n, err
}

// capDeadline is t, or handshakeBy while the handshake lasts and t is later
// (or none).
func (c *sniffConn) capDeadline(t time.Time) time.Time {
	if !c.done.Load() && (t.IsZero() || t.After(c.handshakeBy)) {
		return c.handshakeBy
	}
	return t
}

func (c *sniffConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.capDeadline(t)) }
func (c *sniffConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.capDeadline(t))
}
func (c *sniffConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.capDeadline(t))
}
