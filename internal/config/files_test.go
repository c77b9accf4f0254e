package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ok := write("ok", "0123456789")
	link := filepath.Join(dir, "link")
	if err := os.Symlink("ok", link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		max  int64
		want string // "" for success
	}{
		{ok, 10, ""},
		{link, 10, ""},
		{ok, 9, "has 10 bytes; at most 9 bytes"},
		{write("big", strings.Repeat("x", 2<<10+1)), 2 << 10, "at most 2 KiB"},
		{"/dev/zero", 1 << 20, "a device, not a regular file"},
		{"/proc/self/status", 16, "more than 16 bytes"}, // a /proc file says size 0
		{fifo, 1 << 20, "a FIFO, not a regular file"},
		{dir, 1 << 20, "a directory, not a regular file"},
		{filepath.Join(dir, "none"), 1 << 20, "no such file"},
		{"", 1 << 20, "no such file"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := readFile("some.key", tc.path, tc.max)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("readFile(%q) still reading after 10 s", tc.path)
		}
		var ke *KeyError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("readFile(%q) = %v", tc.path, err)
		case tc.want != "" && (!errors.As(err, &ke) || ke.Key != "some.key" || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("readFile(%q, %d) = %v; want some.key: ...%s", tc.path, tc.max, err, tc.want)
		}
	}
}

func TestKeyErrorIsOneLine(t *testing.T) {
	err := errorf("config", "yaml: line 1:\n  bad\tthing")
	if got, want := err.Error(), "config: yaml: line 1: bad thing"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// The configuration file may be a FIFO or a character device: read until
// its writer closes it, never past the bound, never for longer than the
// timeout; directories and files that cannot be opened are refused as for
// any other file.
func TestReadConfigStream(t *testing.T) {
	dir := t.TempDir()
	fifo := func(name string, write func(w *os.File)) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		if write != nil {
			go func() {
				w, err := os.OpenFile(p, os.O_WRONLY, 0) // waits for the reader
				if err != nil {
					return
				}
				defer w.Close()
				write(w)
			}()
		}
		return p
	}
	held := make(chan struct{})
	defer close(held)
	for _, tc := range []struct {
		name, path string
		want       string // the content read, or the error's text
		ok         bool
	}{
		{"a FIFO", fifo("fifo", func(w *os.File) { w.WriteString("id: from-a-pipe\n") }), "id: from-a-pipe\n", true},
		{"a FIFO's writer in pieces", fifo("slow", func(w *os.File) {
			w.WriteString("id: ")
			time.Sleep(50 * time.Millisecond)
			w.WriteString("slow\n")
		}), "id: slow\n", true},
		{"a FIFO past the bound", fifo("big", func(w *os.File) {
			w.Write(make([]byte, MaxConfigFileBytes+10))
		}), "has more than 64 KiB", false},
		{"a FIFO whose writer never closes it", fifo("held", func(w *os.File) {
			w.WriteString("id: x\n")
			<-held
		}), "did not end within 200ms", false},
		{"a FIFO nobody writes", fifo("none", nil), "nothing wrote to it within 200ms", false},
		{"/dev/null", "/dev/null", "", true},
		{"/dev/zero", "/dev/zero", "has more than 64 KiB", false},
		{"a directory", dir, "a directory, not a regular file, a FIFO or a character device", false},
		{"a missing file", filepath.Join(dir, "missing"), "no such file", false},
		{"a path through a file", filepath.Join("/dev/null", "x"), "not a directory", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := readBounded("config", tc.path, MaxConfigFileBytes, 200*time.Millisecond)
			switch {
			case tc.ok && (err != nil || string(b) != tc.want):
				t.Errorf("read %q, %v; want %q", b, err, tc.want)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	if os.Getuid() != 0 {
		p := filepath.Join(dir, "unreadable")
		if err := os.WriteFile(p, []byte("id: x\n"), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := readConfigFile(p); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("an unreadable file: %v", err)
		}
	}
}
