package listenhold

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The exchange: one message each way, then EOF. A message is a verb line
// and one line per descriptor it carries (its bound address), the
// descriptors in the same order as SCM_RIGHTS.
//
//	list         asks for every kept socket; the reply is "ok" with them
//	hold         hands sockets over to be kept; the reply is "ok"
const (
	verbList = "list"
	verbHold = "hold"
	verbOK   = "ok"
)

// Bounds of one message: a few ports, never more.
const (
	maxMsgBytes = 16 << 10
	maxFDs      = 16
)

// serve answers the other processes until Close.
func (h *Holder) serve() {
	defer h.wg.Done()
	for {
		c, err := h.ln.AcceptUnix()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				h.log.Warn("listenhold: accept", "err", err)
			}
			return
		}
		if err := h.answer(c); err != nil {
			h.log.Warn("listenhold: an exchange failed", "err", err)
		}
	}
}

// answer serves one exchange. Only a process of this user is answered:
// the socket's mode says so too, but a copied socket file must not.
func (h *Holder) answer(c *net.UnixConn) error {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	uid, err := peerUID(c)
	if err != nil {
		return err
	}
	if uid != uint32(os.Getuid()) {
		return fmt.Errorf("refused a peer of uid %d (this process runs as %d)", uid, os.Getuid())
	}
	verb, keys, fds, err := readMsg(c)
	if err != nil {
		return err
	}
	switch verb {
	case verbList:
		closeAll(fds)
		keys, fds, err := h.snapshot()
		if err != nil {
			return err
		}
		defer closeAll(fds)
		return writeMsg(c, verbOK, keys, fds)
	case verbHold:
		for i, fd := range fds {
			key, err := Key(fd)
			if err != nil || key != keys[i] {
				closeAll(fds[i:])
				return fmt.Errorf("refused %q handed over: %v", keys[i], err)
			}
			if h.keep(key, fd) {
				h.log.Info("holding a listening socket", "addr", key)
			}
		}
		return writeMsg(c, verbOK, nil, nil)
	}
	closeAll(fds)
	return fmt.Errorf("unknown request %q", verb)
}

// exchange sends one message to the socket at path and reads the reply.
func exchange(path, verb string, keys []string, fds []int) (string, []string, []int, error) {
	c, err := net.DialTimeout("unix", path, ioTimeout)
	if err != nil {
		return "", nil, nil, err
	}
	defer c.Close()
	uc := c.(*net.UnixConn)
	_ = uc.SetDeadline(time.Now().Add(ioTimeout))
	if err := writeMsg(uc, verb, keys, fds); err != nil {
		return "", nil, nil, err
	}
	return readMsg(uc)
}

// list asks the process at path for every socket it keeps, each checked
// to be a listening TCP socket on the address it came under.
func list(path string) ([]received, error) {
	verb, keys, fds, err := exchange(path, verbList, nil, nil)
	if err != nil {
		return nil, err
	}
	if verb != verbOK {
		closeAll(fds)
		return nil, fmt.Errorf("unexpected reply %q", verb)
	}
	var out []received
	for i, fd := range fds {
		key, err := Key(fd)
		if err != nil || key != keys[i] {
			unix.Close(fd)
			closeAll(fds[i+1:])
			for _, r := range out {
				unix.Close(r.fd)
			}
			if err == nil {
				err = fmt.Errorf("%w: it listens on %s", errNotListener, key)
			}
			return nil, fmt.Errorf("listenhold: %s handed over %q: %w", path, keys[i], err)
		}
		out = append(out, received{key: key, fd: fd})
	}
	return out, nil
}

// hand gives the process at path a copy of fd to keep under key.
func hand(path, key string, fd int) error {
	verb, _, fds, err := exchange(path, verbHold, []string{key}, []int{fd})
	closeAll(fds)
	if err != nil {
		return err
	}
	if verb != verbOK {
		return fmt.Errorf("unexpected reply %q", verb)
	}
	return nil
}

func writeMsg(c *net.UnixConn, verb string, keys []string, fds []int) error {
	msg := strings.Join(append([]string{verb}, keys...), "\n") + "\n"
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := c.WriteMsgUnix([]byte(msg), oob, nil); err != nil {
		return err
	}
	return c.CloseWrite()
}

// readMsg reads one message to EOF. Every descriptor it returns is the
// caller's to close, on error none.
func readMsg(c *net.UnixConn) (verb string, keys []string, fds []int, err error) {
	defer func() {
		if err != nil {
			closeAll(fds)
			fds = nil
		}
	}()
	var data []byte
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4*maxFDs))
	for {
		n, oobn, flags, _, rerr := c.ReadMsgUnix(buf, oob)
		if oobn > 0 {
			got, perr := parseRights(oob[:oobn])
			fds = append(fds, got...)
			if perr != nil {
				return "", nil, fds, perr
			}
		}
		if flags&unix.MSG_CTRUNC != 0 {
			return "", nil, fds, errors.New("too many descriptors in one message")
		}
		data = append(data, buf[:n]...)
		if len(data) > maxMsgBytes {
			return "", nil, fds, errors.New("message too long")
		}
		if errors.Is(rerr, io.EOF) || (rerr == nil && n == 0 && oobn == 0) {
			break
		}
		if rerr != nil {
			return "", nil, fds, rerr
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if lines[0] == "" {
		return "", nil, fds, errors.New("empty message")
	}
	if len(lines)-1 != len(fds) {
		return "", nil, fds, fmt.Errorf("%d addresses for %d descriptors", len(lines)-1, len(fds))
	}
	return lines[0], lines[1:], fds, nil
}

func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			return fds, err
		}
		for _, fd := range got {
			unix.CloseOnExec(fd)
		}
		fds = append(fds, got...)
	}
	return fds, nil
}
