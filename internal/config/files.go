package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Size limits of the local files electd reads. Each is far above what the
// file needs and far below what would hurt: --config /dev/zero used to read
// 720 MB in 3 s.
const (
	// MaxConfigFileBytes bounds the YAML file: every key with its help
	// fits in 6 KiB (config.example.yaml), and parsing YAML allocates some
	// 50 bytes per byte of input (a 1 MiB file: 52 MB).
	MaxConfigFileBytes = 64 << 10
	// MaxSecretFileBytes bounds a token, user:password or private key file.
	MaxSecretFileBytes = 64 << 10
	// MaxCertFileBytes bounds a certificate chain or CA bundle (Debian's
	// whole system bundle is about 220 KiB).
	MaxCertFileBytes = 1 << 20
)

// streamTimeout bounds reading the configuration from a FIFO or a
// character device: whatever writes it (envsubst, cat) is done in
// milliseconds, and one that never closes its end must not hold electd's
// start for ever. A socket-like deadline, on package time.
const streamTimeout = 10 * time.Second

// readFile reads the file at path that key names: a regular file (after
// following symlinks: a Kubernetes Secret mount is a symlink to one) of at
// most max bytes. The open does not block on a FIFO, and a device or
// /proc file is never read past max.
func readFile(key, path string, max int64) ([]byte, error) {
	return readBounded(key, path, max, 0)
}

// readConfigFile reads --config: a regular file as readFile does, or a
// FIFO or character device (`--config /dev/stdin < electd.yaml`, `--config
// <(envsubst < electd.yaml.tmpl)`), read until its writer closes it or
// streamTimeout passes, never past MaxConfigFileBytes.
func readConfigFile(path string) ([]byte, error) {
	return readBounded("config", path, MaxConfigFileBytes, streamTimeout)
}

// readBounded is readFile, taking a FIFO or character device too when
// timeout, which bounds reading one, is not 0.
func readBounded(key, path string, max int64, timeout time.Duration) ([]byte, error) {
	streams := timeout > 0
	// O_NONBLOCK: opening a FIFO for reading would wait for a writer forever.
	// It changes nothing for a regular file; a FIFO's reads then wait on
	// Go's poller, which a deadline bounds.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, errorf(key, "cannot read %s: %v", quote(path), pathErr(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, errorf(key, "cannot read %s: %v", quote(path), pathErr(err))
	}
	m := fi.Mode()
	stream := streams && (m&fs.ModeNamedPipe != 0 || m&fs.ModeCharDevice != 0)
	switch {
	case stream && m&fs.ModeNamedPipe != 0:
		if err := awaitWriter(f, time.Now().Add(timeout)); err != nil {
			return nil, errorf(key, "cannot read %s: %v within %v", quote(path), err, timeout)
		}
		_ = f.SetReadDeadline(time.Now().Add(timeout))
	case stream:
		// Not every device has a deadline (/dev/zero never blocks: max ends it).
		_ = f.SetReadDeadline(time.Now().Add(timeout))
	case !m.IsRegular():
		want := "a regular file"
		if streams {
			want = "a regular file, a FIFO or a character device"
		}
		return nil, errorf(key, "%s is %s, not %s", quote(path), kind(m), want)
	case fi.Size() > max:
		return nil, errorf(key, "%s has %d bytes; at most %s", quote(path), fi.Size(), size(max))
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, errorf(key, "%s did not end within %v (whatever writes it never closed it)", quote(path), timeout)
	case err != nil:
		return nil, errorf(key, "cannot read %s: %v", quote(path), pathErr(err))
	case int64(len(b)) > max:
		return nil, errorf(key, "%s has more than %s", quote(path), size(max))
	}
	return b, nil
}

// awaitWriter waits, until deadline at most, until the FIFO f has
// something to read or a writer that opened it has closed it again:
// poll(2) reports neither while nobody has opened the FIFO for writing
// yet, where read(2) would say end of file at once (a template still being
// rendered into a named FIFO would read as empty). A pipe (/dev/stdin,
// <(...)) always has had its writer.
func awaitWriter(f *os.File, deadline time.Time) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	ready, perr := 0, error(nil)
	if err := rc.Control(func(fd uintptr) {
		for {
			ms := max(int(time.Until(deadline).Milliseconds()), 0)
			ready, perr = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
			if perr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	switch {
	case perr != nil:
		return perr
	case ready == 0:
		return errors.New("nothing wrote to it")
	}
	return nil
}

// pathErr drops the path an *fs.PathError repeats (quoted once already).
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
