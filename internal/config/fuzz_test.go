package config

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"unicode"
)

// FuzzParseYAML: whatever the file holds, parseYAML returns, allocates a
// bounded amount, and an error is one short line naming "config" or a key.
//
//	go test -run '^$' -fuzz '^FuzzParseYAML$' -fuzztime 30s ./internal/config
func FuzzParseYAML(f *testing.F) {
	if example, err := os.ReadFile("../../config.example.yaml"); err == nil {
		f.Add(example)
	}
	f.Add([]byte(laughs()))
	f.Add([]byte(manyKeys(70, true)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > MaxConfigFileBytes {
			t.Skip("ReadFile refuses larger files")
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := parseYAML(data)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Errorf("%d bytes allocated %d MiB", len(data), alloc>>20)
		}
		if err == nil {
			return
		}
		var ke *KeyError
		msg := err.Error()
		if !errors.As(err, &ke) || ke.Key == "" || !strings.HasPrefix(msg, ke.Key+": ") || len(msg) > 512 ||
			strings.IndexFunc(msg, unicode.IsControl) >= 0 {
			t.Errorf("error %q is not one short line naming a key", msg)
		}
	})
}
