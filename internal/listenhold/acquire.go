package listenhold

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// bindRetry bounds how long Acquire keeps asking when the port is taken:
// the other process may be starting, or slow to answer.
const bindRetry = 3 * time.Second

// Acquire returns a listener on addr: the socket another process in the
// directory keeps for addr, else a new one, whose copy it then hands to
// the others. A socket received must be a listening TCP socket on addr;
// anything else is refused with an error naming it.
func (h *Holder) Acquire(ctx context.Context, addr string) (net.Listener, error) {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" {
		return nil, fmt.Errorf("listenhold: %q: a held socket needs a fixed host:port", addr)
	}
	deadline := time.Now().Add(bindRetry)
	for {
		fd, err := h.take(addr)
		if err != nil {
			return nil, err
		}
		if fd < 0 {
			fd, err = h.bind(addr)
		}
		if err == nil {
			return h.listener(addr, fd)
		}
		if !isAddrInUse(err) || time.Now().After(deadline) {
			return nil, err
		}
		// Held by a peer that did not answer yet, or by someone else.
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// take asks the others for addr's socket and keeps every socket they
// keep. It returns -1 when none has addr's.
func (h *Holder) take(addr string) (int, error) {
	if err := h.Fetch(); err != nil {
		return -1, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, fd := range h.fds {
		ok, err := matches(addr, key)
		if err != nil {
			return -1, err
		}
		if ok {
			return fd, nil
		}
	}
	return -1, nil
}

// bind listens on addr, keeps a copy and hands one to every other process.
func (h *Holder) bind(addr string) (int, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return -1, err
	}
	defer ln.Close()
	fd, err := dupOf(ln.(*net.TCPListener))
	if err != nil {
		return -1, err
	}
	key, err := Key(fd)
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	h.keep(key, fd)
	for _, p := range h.peers() {
		if err := hand(p, key, fd); err != nil {
			h.log.Debug("cannot hand the socket over", "addr", key, "peer", filepath.Base(p), "err", err)
		}
	}
	return fd, nil
}

// listener makes a net.Listener on a copy of fd, checked against addr.
func (h *Holder) listener(addr string, fd int) (net.Listener, error) {
	key, err := Key(fd)
	if err != nil {
		return nil, fmt.Errorf("listenhold: the socket held for %s: %w", addr, err)
	}
	if ok, err := matches(addr, key); err != nil || !ok {
		return nil, fmt.Errorf("listenhold: the socket held for %s listens on %s", addr, key)
	}
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(d), "listenhold:"+key)
	defer f.Close()
	return net.FileListener(f)
}

// dupOf is a close-on-exec copy of ln's descriptor. It never touches the
// descriptor's blocking mode, which the copies share (os.File.Fd would).
func dupOf(ln *net.TCPListener) (int, error) {
	raw, err := ln.SyscallConn()
	if err != nil {
		return -1, err
	}
	d, derr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { d, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	return d, derr
}

// matches says whether a socket bound at key serves the configured addr:
// the same port, and the same IP, the unspecified ones
// (v4 or v6: Go binds both as [::]) alike; a host name must resolve to it.
func matches(addr, key string) (bool, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listenhold: %q: %w", addr, err)
	}
	got, err := netip.ParseAddrPort(key)
	if err != nil {
		return false, err
	}
	if port != fmt.Sprint(got.Port()) {
		return false, nil
	}
	ip := got.Addr().Unmap()
	if host == "" {
		return ip.IsUnspecified(), nil
	}
	if want, err := netip.ParseAddr(host); err == nil {
		want = want.Unmap()
		return want == ip || (want.IsUnspecified() && ip.IsUnspecified()), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
	if err != nil {
		return false, fmt.Errorf("listenhold: %q: %w", addr, err)
	}
	for _, a := range ips {
		if a.Unmap() == ip {
			return true, nil
		}
	}
	return false, nil
}
