package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/kube"
	"github.com/electd/electd/internal/proxy"
)

func TestKeys(t *testing.T) {
	names, envs := map[string]bool{}, map[string]bool{}
	for _, k := range Keys() {
		if names[k.Name] || envs[k.Env] {
			t.Errorf("%s: name or variable %s used twice", k.Name, k.Env)
		}
		names[k.Name], envs[k.Env] = true, true
		if k.Name != strings.ToLower(k.Name) || strings.Count(k.Name, ".") > 1 {
			t.Errorf("%s: keys are lower case, at most one section deep", k.Name)
		}
		if k.File != "" {
			if f, ok := Lookup(k.File); !ok || f.Type != "string" {
				t.Errorf("%s: its file key %s is no string key", k.Name, k.File)
			}
		}
		if k.Required && k.Example == "" {
			t.Errorf("%s: a required key needs an example", k.Name)
		}
	}
	for key, want := range map[string]string{
		"zookeeper.servers":         "ELECTD_ZOOKEEPER_SERVERS",
		"election.path":             "ELECTD_ELECTION_PATH",
		"zookeeper.session_timeout": "ELECTD_ZOOKEEPER_SESSION_TIMEOUT",
		"shutdown_grace":            "ELECTD_SHUTDOWN_GRACE",
		"id":                        "ELECTD_ID",
	} {
		if k, ok := Lookup(key); !ok || k.Env != want {
			t.Errorf("%s: variable %q, want %q", key, k.Env, want)
		}
	}
	if !isSection("zookeeper") || isSection("zookeeper.servers") || isSection("id") {
		t.Error("isSection")
	}
}

func TestDefaults(t *testing.T) {
	want := Config{}
	want.ZooKeeper.SessionTimeout = 10 * time.Second
	want.Election.Mode, want.Election.OnSuspend, want.Election.Candidate = "latch", "hold", true
	want.Election.Handoff = "newest"
	want.HTTP.Addr = ":4040"
	want.HTTP.MaxConnections, want.HTTP.MaxStreams, want.HTTP.MaxWaiters = 256, 64, 64
	want.Log.Level, want.Log.Format = "info", "json"
	want.ShutdownTimeout = 10 * time.Second
	want.App = App{HealthInterval: 10 * time.Second, HealthTimeout: time.Second, FailureThreshold: 3, SuccessThreshold: 1}
	want.Exec = Exec{KillTimeout: 5 * time.Second, OnExit: "release"}
	want.Kubernetes.TokenFile, want.Kubernetes.CAFile = kube.DefaultTokenFile, kube.DefaultCAFile
	want.Kubernetes.RecheckInterval = kube.DefaultRecheckInterval
	want.Proxy = Proxy{Mode: "http", AppProtocol: string(proxy.AppHTTP1), HoldTime: CrashTime(zksession.DefaultSessionTimeout), DrainTimeout: proxy.DefaultDrainTimeout,
		MaxHeld: proxy.DefaultMaxHeld, MaxConnections: proxy.DefaultMaxConnections, DialTimeout: proxy.DefaultDialTimeout,
		ClientHeaderTimeout: proxy.DefaultClientHeaderTimeout, ResponseTimeout: proxy.DefaultResponseTimeout,
		IdleTimeout: proxy.DefaultIdleTimeout, BodyTimeout: proxy.DefaultBodyTimeout, MaxHeaderBytes: proxy.DefaultMaxHeaderBytes,
		MaxPeerConnections: proxy.DefaultMaxPeerConnections, PeerStreams: proxy.DefaultPeerStreams,
		PeerTimeout: proxy.DefaultPeerTimeout, ClientBodyTimeout: proxy.DefaultClientBodyTimeout,
		BufferSize: proxy.DefaultBufferSize, BufferTotal: proxy.DefaultBufferTotal, AppTimeoutStepDown: proxy.DefaultAppTimeoutStepDown}
	if got := Defaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("Defaults() =\n %+v\nwant %+v", got, want)
	}
}

// distinct sets every field of c to a value no default has, different per key.
func distinct(c *Config) {
	for i, k := range table {
		f := k.field(c)
		switch k.Type {
		case "string":
			f.SetString(fmt.Sprintf("/v%d", i))
		case "list":
			f.Set(reflect.ValueOf([]string{fmt.Sprintf("h%d:1", i)}))
		case "duration", "int":
			f.SetInt(int64(1000 + i))
		case "bool":
			f.SetBool(true)
		}
	}
}

// Each engine tag names the field that the key's value lands in, and each
// field the mapping sets is named by a tag (TLS aside: several keys build it).
func TestEngineTags(t *testing.T) {
	var zero, c Config
	distinct(&c)
	c.ZooKeeper.Chroot = "" // else Path is chroot + election.path
	engine := func(c *Config) reflect.Value {
		return reflect.ValueOf(struct {
			S zksession.Config
			E election.Config
		}{c.session(nil), c.election()})
	}
	got, base := engine(&c), engine(&zero)
	tagged := map[string]bool{}
	for _, k := range table {
		if k.Engine == "" {
			continue
		}
		tagged[k.Engine] = true
		f := got.Field(0).FieldByName(k.Engine)
		if !f.IsValid() {
			f = got.Field(1).FieldByName(k.Engine)
		}
		if !f.IsValid() {
			t.Errorf("%s: engine field %s does not exist", k.Name, k.Engine)
			continue
		}
		want := k.field(&c)
		if f.Kind() == reflect.String {
			f, want = reflect.ValueOf(f.String()), reflect.ValueOf(want.String())
		}
		if !reflect.DeepEqual(f.Interface(), want.Interface()) {
			t.Errorf("%s: engine field %s = %v, want the key's value %v", k.Name, k.Engine, f, want)
		}
	}
	for i := range 2 {
		typ := got.Field(i).Type()
		for j := range typ.NumField() {
			name := typ.Field(j).Name
			if !reflect.DeepEqual(got.Field(i).Field(j).Interface(), base.Field(i).Field(j).Interface()) && !tagged[name] {
				t.Errorf("%s.%s is set from the keys but no key's engine tag names it", typ.Name(), name)
			}
		}
	}
}

// The limits quoted in help texts are the enforced ones.
func TestHelpQuotesTheLimits(t *testing.T) {
	dur := func(d time.Duration) string {
		s := d.String()
		s = strings.TrimSuffix(s, "0s")
		return strings.TrimSuffix(s, "0m")
	}
	for key, want := range map[string]string{
		"id":                        strconv.Itoa(election.MaxIDBytes) + " bytes",
		"advertise":                 strconv.Itoa(election.MaxAdvertiseBytes) + " bytes",
		"zookeeper.session_timeout": dur(zksession.MinSessionTimeout) + " to " + dur(zksession.MaxSessionTimeout),
		"election.path":             strconv.Itoa(election.MaxPathBytes) + " bytes",
		"election.term":             dur(election.MinTerm) + " to " + dur(election.MaxTerm),
		"election.claim_delay":      "at most " + dur(election.MaxClaimDelay),
		"election.fencing_offset":   "0 to 2^62",
		"http.max_connections":      "1 to " + strconv.Itoa(MaxConnections),
		"http.max_streams":          "1 to " + strconv.Itoa(MaxStreams),
		"http.max_waiters":          "1 to " + strconv.Itoa(MaxWaiters),
		"shutdown_timeout":          "at most " + dur(MaxShutdownTimeout),
		"app.health_url":            strconv.Itoa(MaxHealthURLBytes) + " bytes",
		"app.health_interval":       dur(MinHealthInterval) + " to " + dur(MaxHealthInterval),
		"app.health_timeout":        dur(MinHealthTimeout) + " up to",
		"app.failure_threshold":     "1 to " + strconv.Itoa(MaxThreshold),
		"app.success_threshold":     "1 to " + strconv.Itoa(MaxThreshold),
		"exec.kill_timeout":         "0s to " + dur(MaxKillTimeout),
		"proxy.hold_time":           dur(proxy.MinHoldTime) + " to " + dur(proxy.MaxHoldTime),
		"proxy.max_connections":     "1 to " + strconv.Itoa(proxy.MaxCap),
		"proxy.max_header_bytes":    strconv.Itoa(proxy.MinHeaderBytes) + " to " + strconv.Itoa(proxy.MaxHeaderBytes),
	} {
		if k, _ := Lookup(key); !strings.Contains(k.Help, want) {
			t.Errorf("%s: help %q does not say %q", key, k.Help, want)
		}
	}
	if election.MaxFencingOffset != 1<<62 {
		t.Error("election.fencing_offset's help says 2^62")
	}
}
