// Package listenhold keeps listening TCP sockets open across a restart of
// the process that serves them (docs/design/kubernetes.md, "A crashed
// sidecar, a lost node"). Two processes share a directory (a memory-backed
// emptyDir): each keeps a copy of every listening socket's descriptor and
// hands copies over a unix socket there (SCM_RIGHTS). A socket then lives
// while either process lives; connections that arrive while one restarts
// wait in the kernel's accept queue.
//
// electd calls Acquire for each port: it takes the socket from the other
// process, or binds it and hands a copy over. The holder (electd
// hold-listener) only keeps what it is given, and asks for everything when
// it starts. Neither trusts what it receives: a descriptor must be a
// listening TCP socket, on the configured address for Acquire.
package listenhold

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Roles name the two processes, and their sockets in the directory.
const (
	RoleElectd = "electd"
	RoleHolder = "holder"
)

// ioTimeout bounds one exchange with the other process: both are local,
// so a peer that takes longer is stuck and is skipped.
const ioTimeout = 2 * time.Second

// Holder keeps copies of listening sockets and hands them to the other
// process in its directory. Open starts serving; Close stops.
type Holder struct {
	dir, role string
	log       *slog.Logger
	ln        *net.UnixListener
	wg        sync.WaitGroup

	mu  sync.Mutex
	fds map[string]int // by bound address (Key): this process's copies
}

// Open serves dir/<role>.sock (mode 0600) until Close. dir must exist.
// A socket left there by a previous run of the same role is replaced.
func Open(dir, role string, log *slog.Logger) (*Holder, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("listenhold: %q is not an absolute path", dir)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("listenhold: the hold directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("listenhold: %s is not a directory", dir)
	}
	path := sockPath(dir, role)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("listenhold: remove the stale %s: %w", path, err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listenhold: %w", err)
	}
	// The umask already denies others the write access connect needs.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("listenhold: %w", err)
	}
	h := &Holder{dir: dir, role: role, log: log, ln: ln, fds: map[string]int{}}
	h.wg.Add(1)
	go h.serve()
	return h, nil
}

func sockPath(dir, role string) string { return filepath.Join(dir, role+".sock") }

// Close stops serving, removes this process's socket file and closes its
// copies. Listeners handed out by Acquire stay open.
func (h *Holder) Close() error {
	h.ln.SetUnlinkOnClose(true)
	err := h.ln.Close()
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, fd := range h.fds {
		unix.Close(fd)
		delete(h.fds, k)
	}
	return err
}

// Held lists the bound addresses this process keeps, sorted.
func (h *Holder) Held() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.fds))
	for k := range h.fds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// keep adds fd under key unless a copy is already kept; it closes fd then
// (the same socket, handed over twice). It reports whether fd was kept.
func (h *Holder) keep(key string, fd int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.fds[key]; ok {
		unix.Close(fd)
		return false
	}
	h.fds[key] = fd
	return true
}

// snapshot is a dup of every kept copy, for a reply; the caller closes them.
func (h *Holder) snapshot() (keys []string, fds []int, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, fd := range h.fds {
		d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			closeAll(fds)
			return nil, nil, err
		}
		keys, fds = append(keys, k), append(fds, d)
	}
	return keys, fds, nil
}

// peers are the other processes' socket paths in the directory.
func (h *Holder) peers() []string {
	entries, err := os.ReadDir(h.dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.Type()&os.ModeSocket == 0 || !strings.HasSuffix(name, ".sock") || name == h.role+".sock" {
			continue
		}
		out = append(out, filepath.Join(h.dir, name))
	}
	return out
}

// Fetch asks every other process for all it keeps and keeps copies: the
// holder's start, so that a restarted holder holds again at once. A peer
// that does not answer is skipped (it may be restarting); one that hands
// over what is no listening TCP socket is an error.
func (h *Holder) Fetch() error {
	var bad error
	for _, p := range h.peers() {
		got, err := list(p)
		if errors.Is(err, errNotListener) {
			bad = errors.Join(bad, err)
			continue
		}
		if err != nil {
			h.log.Debug("cannot ask for the held sockets", "peer", p, "err", err)
			continue
		}
		for _, s := range got {
			if h.keep(s.key, s.fd) {
				h.log.Info("holding a listening socket", "addr", s.key, "from", filepath.Base(p))
			}
		}
	}
	return bad
}

// received is one descriptor with the address it was sent under.
type received struct {
	key string
	fd  int
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

var errNotListener = errors.New("listenhold: not a listening TCP socket")

// Key is a listening TCP socket's bound address, or an error naming why
// fd is no such socket.
func Key(fd int) (string, error) {
	// Go's listeners are MPTCP where the kernel has it: TCP to clients.
	for _, c := range []struct {
		opt  int
		want []int
		what string
	}{
		{unix.SO_TYPE, []int{unix.SOCK_STREAM}, "a stream socket"},
		{unix.SO_PROTOCOL, []int{unix.IPPROTO_TCP, unix.IPPROTO_MPTCP}, "TCP"},
		{unix.SO_ACCEPTCONN, []int{1}, "listening"},
	} {
		got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, c.opt)
		if err != nil {
			return "", fmt.Errorf("%w: %w", errNotListener, err)
		}
		if !slices.Contains(c.want, got) {
			return "", fmt.Errorf("%w: it is not %s", errNotListener, c.what)
		}
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errNotListener, err)
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), fmt.Sprint(a.Port)), nil
	case *unix.SockaddrInet6:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), fmt.Sprint(a.Port)), nil
	}
	return "", fmt.Errorf("%w: not an IP socket", errNotListener)
}

// peerUID is the user id of the process at the other end of c.
func peerUID(c *net.UnixConn) (uint32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return cred.Uid, nil
}

// isAddrInUse reports a bind that failed because the port is taken.
func isAddrInUse(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }
