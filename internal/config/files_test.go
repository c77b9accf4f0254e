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
