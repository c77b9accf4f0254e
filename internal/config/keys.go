package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/httpapi"
	"github.com/electd/electd/internal/proxy"
)

// Key is one configuration key, as Config's tags declare it.
type Key struct {
	Name     string // dotted path: zookeeper.session_timeout
	Env      string // ELECTD_ZOOKEEPER_SESSION_TIMEOUT
	Type     string // string, list, duration, int or bool
	Default  string // as written in a file ("" for none or empty)
	Computed string // description of a default computed at start, or ""
	Help     string
	Example  string // value config.example.yaml shows; "" for the default
	Required bool
	Secret   bool   // masked in output, never quoted in errors
	File     string // for a secret: the key that may name a file holding it
	Engine   string // zksession.Config or election.Config field, or ""
	Kube     string // kube.Config field, or ""
	Proxy    string // proxy.Config field, or ""
	index    []int
}

// DefaultText is the default as --help says it.
func (k Key) DefaultText() string {
	switch {
	case k.Required:
		return "none, required"
	case k.Computed != "":
		return k.Computed
	case k.Default == "":
		return "empty"
	}
	return k.Default
}

// Section is the key's section ("zookeeper"), or "" for a top-level key.
func (k Key) Section() string {
	sec, _, ok := strings.Cut(k.Name, ".")
	if !ok {
		return ""
	}
	return sec
}

// needsProxy reports a key that is refused without proxy.listen: every
// proxy key but that one (validateProxy).
func (k Key) needsProxy() bool { return k.Section() == "proxy" && k.Name != "proxy.listen" }

// Leaf is the key's last segment.
func (k Key) Leaf() string { return k.Name[strings.LastIndexByte(k.Name, '.')+1:] }

// field is the key's field in c.
func (k Key) field(c *Config) reflect.Value {
	return reflect.ValueOf(c).Elem().FieldByIndex(k.index)
}

// EnvName is a key's environment variable: ELECTD_ + the key in upper case,
// "." as "_".
func EnvName(key string) string {
	return "ELECTD_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// packageDefaults are the defaults that the package a key configures
// declares itself: such a key's tag has no default, and its help says
// {default}, so that each default is stated in one place.
var packageDefaults = map[string]any{
	"zookeeper.session_timeout":   zksession.DefaultSessionTimeout,
	"http.max_streams":            httpapi.DefaultMaxStreams,
	"http.max_waiters":            httpapi.DefaultMaxWaiters,
	"proxy.hold_time":             CrashTime(zksession.DefaultSessionTimeout),
	"proxy.drain_timeout":         proxy.DefaultDrainTimeout,
	"proxy.max_held":              proxy.DefaultMaxHeld,
	"proxy.max_connections":       proxy.DefaultMaxConnections,
	"proxy.max_peer_connections":  proxy.DefaultMaxPeerConnections,
	"proxy.peer_streams":          proxy.DefaultPeerStreams,
	"proxy.peer_timeout":          proxy.DefaultPeerTimeout,
	"proxy.dial_timeout":          proxy.DefaultDialTimeout,
	"proxy.client_header_timeout": proxy.DefaultClientHeaderTimeout,
	"proxy.client_body_timeout":   proxy.DefaultClientBodyTimeout,
	"proxy.response_timeout":      proxy.DefaultResponseTimeout,
	"proxy.idle_timeout":          proxy.DefaultIdleTimeout,
	"proxy.body_timeout":          proxy.DefaultBodyTimeout,
	"proxy.max_header_bytes":      proxy.DefaultMaxHeaderBytes,
	"proxy.buffer_size":           proxy.DefaultBufferSize,
	"proxy.buffer_total":          proxy.DefaultBufferTotal,
	"proxy.app_timeout_stepdown":  proxy.DefaultAppTimeoutStepDown,
}

// table is Config's keys, read once from its tags; never modified.
var table = mustKeys()

// Keys returns every key, in Config's field order.
func Keys() []Key { return slices.Clone(table) }

// Lookup returns the key named name.
func Lookup(name string) (Key, bool) {
	for _, k := range table {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

// isSection reports whether name is a section (a prefix of keys).
func isSection(name string) bool {
	for _, k := range table {
		if strings.HasPrefix(k.Name, name+".") {
			return true
		}
	}
	return false
}

var durationType = reflect.TypeFor[time.Duration]()

func mustKeys() []Key {
	keys, err := keysOf(reflect.TypeFor[Config](), "", nil)
	if err != nil {
		panic(err) // a tag typo: TestKeys shows it
	}
	return keys
}

func keysOf(t reflect.Type, prefix string, index []int) ([]Key, error) {
	var keys []Key
	for i := range t.NumField() {
		f := t.Field(i)
		name := prefix + f.Tag.Get("mapstructure")
		idx := append(slices.Clip(index), i)
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			sub, err := keysOf(f.Type, name+".", idx)
			if err != nil {
				return nil, err
			}
			keys = append(keys, sub...)
			continue
		}
		k, err := keyOf(f, name, idx)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func keyOf(f reflect.StructField, name string, index []int) (Key, error) {
	k := Key{
		Name: name, Env: EnvName(name), Type: typeName(f.Type),
		Computed: f.Tag.Get("computed"), Help: f.Tag.Get("help"),
		Example: f.Tag.Get("example"), Engine: f.Tag.Get("engine"), Kube: f.Tag.Get("kube"), Proxy: f.Tag.Get("proxy"), index: index,
	}
	def, hasDefault := f.Tag.Lookup("default")
	if v, ok := packageDefaults[name]; ok {
		if hasDefault {
			return k, fmt.Errorf("config: %s: the default is its package's; drop the tag's", name)
		}
		def, hasDefault = fmt.Sprint(v), true
	}
	k.Default = def
	k.Help = strings.ReplaceAll(k.Help, "{default}", def)
	for opt := range strings.SplitSeq(f.Tag.Get("key"), ",") {
		switch {
		case opt == "required":
			k.Required = true
		case opt == "secret":
			k.Secret = true
		case strings.HasPrefix(opt, "file="):
			k.File = k.Name[:len(k.Name)-len(k.Leaf())] + strings.TrimPrefix(opt, "file=")
		case opt != "":
			return k, fmt.Errorf("config: %s: unknown key option %q", name, opt)
		}
	}
	switch {
	case k.Type == "":
		return k, fmt.Errorf("config: %s: unsupported type %v", name, f.Type)
	case k.Help == "":
		return k, fmt.Errorf("config: %s: no help", name)
	case hasDefault == (k.Required || k.Computed != ""):
		return k, fmt.Errorf("config: %s: needs exactly one of default, required, computed", name)
	}
	return k, nil
}

func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Bool:
		return "bool"
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		return "int"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return "list"
	}
	return ""
}
