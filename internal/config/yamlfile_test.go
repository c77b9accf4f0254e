package config

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseYAML(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want map[string]any
		key  string // of the error; "" for none
	}{
		{"empty", "", map[string]any{}, ""},
		{"comments only", "# nothing\n", map[string]any{}, ""},
		{"null", "~\n", map[string]any{}, ""},
		{"keys", "id: a\nzookeeper:\n  servers: [a:1]\n", map[string]any{"id": "a", "zookeeper": map[string]any{"servers": []any{"a:1"}}}, ""},
		{"anchor", "advertise: &x a\nid: *x\n", map[string]any{"advertise": "a", "id": "a"}, ""},
		{"list", "- a\n", nil, "config"},
		{"scalar", "a\n", nil, "config"},
		{"does not parse", "election: [", nil, "config"},
		{"key twice", "id: a\nid: b\n", nil, "id"},
		{"key twice in a section", "zookeeper:\n  chroot: /a\n  Chroot: /b\n", nil, "zookeeper.chroot"},
		{"strange key twice", "\"a\\nb\": 1\n\"a\\nb\": 2\n", nil, `"a\nb"`},
		{"billion laughs", laughs(), nil, "config"},
		{"too deep", deep(7), nil, "config"},
		{"deep enough", deep(6), nil, ""},
		{"too many nodes", "zookeeper:\n  servers: [" + strings.Repeat("a:1,", 5000) + "]\n", nil, "config"},
		{"too many keys", manyKeys(65, false), nil, "config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseYAML([]byte(tc.in))
			var ke *KeyError
			switch {
			case tc.key == "" && tc.want == nil && err != nil:
				t.Errorf("%v", err)
			case tc.key == "" && tc.want != nil && (err != nil || !reflect.DeepEqual(got, tc.want)):
				t.Errorf("%v, %v; want %v", got, err, tc.want)
			case tc.key != "" && (!errors.As(err, &ke) || ke.Key != tc.key):
				t.Errorf("%v; want an error naming %s", err, tc.key)
			}
		})
	}
}

// deep nests n mappings.
func deep(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat("  ", i) + "a:\n")
	}
	return b.String() + strings.Repeat("  ", n) + "b: 1\n"
}

func laughs() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		b.WriteString(strings.TrimSuffix(strings.Repeat("*a"+string(rune('0'+i-1))+", ", 10), ", "))
		b.WriteString("]\n")
	}
	return b.String()
}

// manyKeys is a mapping of n keys: all the same one, or all different.
func manyKeys(n int, same bool) string {
	var b strings.Builder
	for i := range n {
		if same {
			b.WriteString("a: 1\n")
		} else {
			b.WriteString("k" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676)) + ": 1\n")
		}
	}
	return b.String()
}

// yaml.v3 alone took 2 s and 360 MB for 2,000 copies of one key, and 55 s
// for a 1 MiB file of distinct keys: the shape check refuses both before
// decoding, in linear time.
func TestParseYAMLIsLinear(t *testing.T) {
	for _, in := range []string{
		manyKeys(MaxConfigFileBytes/5, true),
		manyKeys(MaxConfigFileBytes/12, false),
		"a:\n" + strings.Repeat(" b: 1\n", MaxConfigFileBytes/6),
	} {
		in = in[:min(len(in), MaxConfigFileBytes)]
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := parseYAML([]byte(in))
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%d bytes of repeated keys parsed", len(in))
		}
		// Linear: tens of bytes per input byte. Quadratic would be gigabytes.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 200*uint64(len(in)) {
			t.Errorf("%d bytes of input allocated %d bytes", len(in), alloc)
		}
		t.Logf("%d bytes: %v in %v", len(in), err, took)
	}
}
