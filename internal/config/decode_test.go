package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecodeHook(t *testing.T) {
	hook := decodeHook()
	str, dur, i64, i, b, list := reflect.TypeFor[string](), durationType, reflect.TypeFor[int64](),
		reflect.TypeFor[int](), reflect.TypeFor[bool](), reflect.TypeFor[[]string]()
	for _, tc := range []struct {
		to   reflect.Type
		in   any
		want any // nil: unset
		err  string
	}{
		{str, "  web-1\n", "web-1", ""},
		{str, "", nil, ""},
		{str, " \t\n", nil, ""},
		{str, 42, "42", ""},
		{str, true, "true", ""},
		{str, []any{"a"}, nil, "single value"},
		{str, map[string]any{"a": 1}, nil, "single value"},
		{dur, "10s", 10 * time.Second, ""},
		{dur, " 1m30s ", 90 * time.Second, ""},
		{dur, "0", time.Duration(0), ""},
		{dur, 0, time.Duration(0), ""},
		{dur, "10", nil, "no unit"},
		{dur, "1.5", nil, "no unit"},
		{dur, 10, nil, "no unit"},
		{dur, 2.5, nil, "no unit"},
		{dur, "-1s", nil, "negative"},
		{dur, "soon", nil, "not a duration"},
		{dur, "9999999999h", nil, "not a duration"},
		{dur, []any{}, nil, "single value"},
		{i64, "4294967296", int64(1 << 32), ""},
		{i64, 7, int64(7), ""},
		{i64, "-1", int64(-1), ""}, // ranges are validation's
		{i64, "1e3", nil, "whole number"},
		{i64, 1.5, nil, "whole number"},
		{i64, "9223372036854775808", nil, "whole number"},
		{i64, uint64(1 << 63), nil, "too large"},
		{i, "256", 256, ""},
		{i, "0x10", nil, "whole number"},
		{b, true, true, ""},
		{b, "TRUE", true, ""},
		{b, " false ", false, ""},
		{b, "yes", nil, "true or false"},
		{b, "1", nil, "true or false"},
		{b, 1, nil, "true or false"},
		{list, "a:1, b:2,,", []string{"a:1", "b:2"}, ""},
		{list, []any{"a:1", " b:2 "}, []string{"a:1", "b:2"}, ""},
		{list, []any{"a:1,b:2"}, []string{"a:1", "b:2"}, ""},
		{list, []any{}, []string{}, ""},
		{list, []any{[]any{"a"}}, nil, "list of single values"},
		{list, map[string]any{}, nil, "not a mapping"},
	} {
		got, err := hook(reflect.TypeOf(tc.in), tc.to, tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v from %#v: %v, %v; want an error with %q", tc.to, tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || !reflect.DeepEqual(got, tc.want)):
			t.Errorf("%v from %#v: %#v, %v; want %#v", tc.to, tc.in, got, err, tc.want)
		}
	}
}

func TestDecodeLeavesUnsetKeysAtTheirDefault(t *testing.T) {
	c := Defaults()
	err := Decode(map[string]any{
		"election": map[string]any{"mode": "", "term": " "},
		"http":     map[string]any{"max_streams": "7"},
	}, &c)
	if err != nil || c.Election.Mode != "latch" || c.HTTP.MaxStreams != 7 || c.HTTP.MaxWaiters != 64 {
		t.Errorf("%v: %+v", err, c)
	}
	if err := Decode(map[string]any{"election": map[string]any{"paht": "/x"}}, &c); err == nil {
		t.Error("an unknown key decoded")
	}
}
