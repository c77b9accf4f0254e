package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
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

// readFile reads the file at path that key names: a regular file (after
// following symlinks: a Kubernetes Secret mount is a symlink to one) of at
// most max bytes. The open does not block on a FIFO, and a device or
// /proc file is never read past max.
func readFile(key, path string, max int64) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO for reading would wait for a writer forever.
	// It changes nothing for a regular file, and anything else is refused.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, errorf(key, "cannot read %s: %v", quote(path), pathErr(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, errorf(key, "cannot read %s: %v", quote(path), pathErr(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, errorf(key, "%s is %s, not a regular file", quote(path), kind(fi.Mode()))
	}
	if fi.Size() > max {
		return nil, errorf(key, "%s has %d bytes; at most %s", quote(path), fi.Size(), size(max))
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, errorf(key, "cannot read %s: %v", quote(path), pathErr(err))
	}
	if int64(len(b)) > max {
		return nil, errorf(key, "%s has more than %s", quote(path), size(max))
	}
	return b, nil
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
