package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
)

// decodeHook turns what a source holds into a field's type, the same way
// for every source: strings from flags and the environment, YAML types from
// a file. It is a mapstructure DecodeHookFuncType, for viper's Unmarshal.
//
//   - A string is trimmed; a blank one is "not set": the hook returns nil,
//     which leaves the field as it was (its default). Blank secrets are
//     refused before decoding (checkKeys), since they must not fall back.
//   - A duration needs a unit: "10" and a YAML 10 are errors, not 10 ns; 0
//     alone is zero in any unit. Durations are never negative.
//   - An int is decimal digits or a YAML integer; floats are refused.
//   - A bool is true or false (any case) or a YAML bool; "yes", "1" are refused.
//   - A list is a YAML list or a comma-separated string; items are trimmed,
//     empty ones dropped.
//
// Errors say what is wrong with the value; mapstructure adds the key.
func decodeHook() mapstructure.DecodeHookFuncType {
	return func(_, to reflect.Type, data any) (any, error) {
		if s, ok := data.(string); ok && strings.TrimSpace(s) == "" && to.Kind() != reflect.Struct {
			return nil, nil
		}
		switch typeName(to) {
		case "string":
			return toString(data)
		case "duration":
			return toDuration(data)
		case "int":
			return toInt(data, to)
		case "bool":
			return toBool(data)
		case "list":
			return toList(data)
		}
		return data, nil
	}
}

var errNotScalar = errors.New("must be a single value, not a list or mapping")

func toString(data any) (string, error) {
	switch v := data.(type) {
	case string:
		return strings.TrimSpace(v), nil
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(v), nil
	}
	return "", errNotScalar
}

func toDuration(data any) (time.Duration, error) {
	var s string
	switch v := data.(type) {
	case string:
		s = strings.TrimSpace(v)
	case int, int64, uint64, float64:
		if fmt.Sprint(v) == "0" {
			return 0, nil
		}
		return 0, fmt.Errorf("%v has no unit; quote a duration such as \"10s\" or \"500ms\"", v)
	default:
		return 0, errNotScalar
	}
	if s == "0" {
		return 0, nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("%s has no unit; write e.g. %ss or %sms", quote(s), s, s)
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%s is not a duration such as 10s, 500ms or 1m30s", quote(s))
	case d < 0:
		return 0, fmt.Errorf("%s must not be negative", quote(s))
	}
	return d, nil
}

func toInt(data any, to reflect.Type) (any, error) {
	var n int64
	switch v := data.(type) {
	case string:
		var err error
		if n, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
			return nil, fmt.Errorf("%s is not a whole number", quote(v))
		}
	case int:
		n = int64(v)
	case int64:
		n = v
	case uint64:
		if v > math.MaxInt64 {
			return nil, fmt.Errorf("%d is too large", v)
		}
		n = int64(v)
	case float64, bool:
		return nil, fmt.Errorf("%v is not a whole number", v)
	default:
		return nil, errNotScalar
	}
	out := reflect.New(to).Elem()
	if out.OverflowInt(n) {
		return nil, fmt.Errorf("%d is too large", n)
	}
	out.SetInt(n)
	return out.Interface(), nil
}

func toBool(data any) (bool, error) {
	switch v := data.(type) {
	case bool:
		return v, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return false, fmt.Errorf("%s is not true or false", quote(v))
	case int, int64, uint64, float64:
		return false, fmt.Errorf("%v is not true or false", v)
	}
	return false, errNotScalar
}

func toList(data any) ([]string, error) {
	var parts []string
	switch v := data.(type) {
	case []any:
		for _, e := range v {
			s, err := toString(e)
			if err != nil {
				return nil, errors.New("must be a list of single values")
			}
			parts = append(parts, strings.Split(s, ",")...)
		}
	case []string:
		for _, e := range v {
			parts = append(parts, strings.Split(e, ",")...)
		}
	case map[string]any, map[any]any:
		return nil, errors.New("must be a list or a comma-separated string, not a mapping")
	default:
		s, err := toString(v)
		if err != nil {
			return nil, err
		}
		parts = strings.Split(s, ",")
	}
	out := []string{}
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// quote shows a value in an error: quoted, control characters escaped, cut
// at 64 bytes, so that a message stays one short line.
func quote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}

// Defaults returns a Config holding every key's default, decoded from the
// default tags by decodeHook like any other value. Computed defaults (id)
// are left empty for the caller.
func Defaults() Config {
	m := map[string]any{}
	for _, k := range table {
		if k.Default == "" {
			continue
		}
		setIn(m, k, k.Default)
	}
	var c Config
	if err := Decode(m, &c); err != nil {
		panic(err) // a bad default tag: TestDefaults shows it
	}
	return c
}

// Decode decodes a nested map of key values onto c with decodeHook,
// refusing keys that are not Config's, as Load decodes what its sources
// hold (the deploy tests decode the manifests' values with it).
func Decode(m map[string]any, c *Config) error {
	dc := &mapstructure.DecoderConfig{Result: c}
	decoderOptions(dc)
	d, err := mapstructure.NewDecoder(dc)
	if err != nil {
		return err
	}
	return d.Decode(m)
}

// decoderOptions sets the decoding options every caller uses: decodeHook,
// no weak typing (the hook converts, strictly), unknown keys are errors.
// It is a viper.DecoderConfigOption.
func decoderOptions(dc *mapstructure.DecoderConfig) {
	dc.DecodeHook = decodeHook()
	dc.WeaklyTypedInput = false
	dc.ErrorUnused = true
}
