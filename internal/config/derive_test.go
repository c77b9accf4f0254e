package config

import (
	"errors"
	"testing"
	"time"
)

// documented are values the help texts name for a key (its limits), each
// of which must validate when set alone. The example or default of every
// key is tried besides.
var documented = map[string][]string{
	"zookeeper.session_timeout":   {"1s", "10m"},
	"election.term":               {"0s"},
	"election.claim_delay":        {"0s", "10m"},
	"election.fencing_offset":     {"0", "4611686018427387904"},
	"http.addr":                   {":4040", "127.0.0.1:0", ":0", "[::1]:0"},
	"http.max_connections":        {"18", "100", "16384"},
	"http.max_streams":            {"1", "4096"},
	"http.max_waiters":            {"1", "4096"},
	"shutdown_grace":              {"0s", "9s", "10s", "9m"},
	"shutdown_timeout":            {"1s", "10m"},
	"app.health_interval":         {"100ms", "200ms", "1h"},
	"app.health_timeout":          {"10ms", "30s", "1h"},
	"app.failure_threshold":       {"1", "100"},
	"app.success_threshold":       {"1", "100"},
	"exec.kill_timeout":           {"0s", "10s", "9m"},
	"kubernetes.recheck_interval": {"1s", "1h"},
	"proxy.hold_time":             {"10ms", "5m"},
	"proxy.drain_timeout":         {"1ms", "1m"},
	"proxy.max_held":              {"1", "1048576"},
	"proxy.max_connections":       {"1", "1048576"},
	"proxy.dial_timeout":          {"1ms", "1m"},
	"proxy.client_header_timeout": {"1ms", "10m"},
	"proxy.client_body_timeout":   {"1ms", "10m"},
	"proxy.peer_timeout":          {"10ms", "1m"},
	"proxy.peer_streams":          {"1", "65536"},
	"proxy.max_peer_connections":  {"1", "1048576"},
	"proxy.buffer_size":           {"1024", "67108864"},
	"proxy.buffer_total":          {"1048576", "17179869184"},
	"proxy.app_timeout_stepdown":  {"1", "1000"},
	"proxy.app_max_in_flight":     {"0", "1048576"},
	"proxy.response_timeout":      {"1ms", "24h"},
	"proxy.idle_timeout":          {"1s", "24h"},
	"proxy.body_timeout":          {"1ms", "24h"},
	"proxy.max_header_bytes":      {"1024", "1048576"},
}

// Each key's example (config.example.yaml's value) or default, and each
// value its help names, set alone on top of the defaults, validates: a
// default the user did not set never rejects a value the user did set
// (app.health_interval: 200ms alone used to fail on app.health_timeout's
// 1s). In the daemon and under electd run.
func TestEveryDocumentedValueAloneValidates(t *testing.T) {
	cleanEnv(t)
	for _, k := range table {
		values := append([]string{k.Example}, documented[k.Name]...)
		if k.Example == "" {
			values[0] = k.Default
		}
		for _, v := range values {
			for _, mode := range [][]string{nil, {"run"}} {
				args := append(append(append([]string{}, mode...), minimal...), "--"+k.Name+"="+v)
				if k.Section() == "proxy" && v != "" {
					args = append(args, proxyOn(k.Name)...) // alone it is refused: the proxy is off
				}
				if mode != nil {
					args = append(args, "--", "true")
				}
				if _, err := loadArgs(t, args...); err != nil {
					t.Errorf("%s: %v", args[len(mode):], err)
				}
			}
		}
	}
}

// proxyOn turns the proxy on around key: proxy.listen and proxy.app,
// unless key is one of them.
func proxyOn(key string) []string {
	var args []string
	for _, kv := range [][2]string{{"proxy.listen", "127.0.0.1:4041"}, {"proxy.app", "127.0.0.1:8080"}, {"proxy.peer_key", testPeerKey}} {
		if kv[0] != key {
			args = append(args, "--"+kv[0]+"="+kv[1])
		}
	}
	return args
}

// A default that depends on another key follows what that key was set to,
// and only where it would otherwise fail; what was set is never changed.
func TestDerivedDefaults(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		name  string
		args  []string
		check func(l *Loaded) bool
	}{
		{"short interval: timeout follows", with("--app.health_interval", "200ms"),
			func(l *Loaded) bool {
				return l.App.HealthTimeout == 200*time.Millisecond && l.App.HealthInterval == 200*time.Millisecond
			}},
		{"interval that fits: timeout stays", with("--app.health_interval", "2s"),
			func(l *Loaded) bool { return l.App.HealthTimeout == time.Second }},
		{"long timeout: interval follows", with("--app.health_timeout", "30s"),
			func(l *Loaded) bool { return l.App.HealthInterval == 30*time.Second }},
		{"long grace: timeout follows", with("--shutdown_grace", "15s"),
			func(l *Loaded) bool { return l.ShutdownTimeout == 20*time.Second && l.ShutdownGrace == 15*time.Second }},
		{"grace that fits: timeout stays", with("--shutdown_grace", "9s"),
			func(l *Loaded) bool { return l.ShutdownTimeout == 10*time.Second }},
		{"grace near the maximum: timeout at the maximum", with("--shutdown_grace", "9m58s"),
			func(l *Loaded) bool { return l.ShutdownTimeout == MaxShutdownTimeout }},
		{"run, long kill: timeout follows", append([]string{"run"}, with("--exec.kill_timeout", "30s", "--", "true")...),
			func(l *Loaded) bool { return l.ShutdownTimeout == 35*time.Second }},
		{"run, kill and grace: timeout holds both", append([]string{"run"}, with("--exec.kill_timeout", "10s", "--shutdown_grace", "3s", "--", "true")...),
			func(l *Loaded) bool { return l.ShutdownTimeout == 18*time.Second }},
		{"run, short timeout: kill follows", append([]string{"run"}, with("--shutdown_timeout", "2s", "--", "true")...),
			func(l *Loaded) bool { return l.Exec.KillTimeout == time.Second }},
		{"no run, short timeout: kill stays", with("--shutdown_timeout", "2s"),
			func(l *Loaded) bool { return l.Exec.KillTimeout == 5*time.Second }},
		{"few connections: streams and waiters share them", with("--http.max_connections", "100"),
			func(l *Loaded) bool { return l.HTTP.MaxStreams == 42 && l.HTTP.MaxWaiters == 42 }},
		{"few connections, streams set: waiters get the rest", with("--http.max_connections", "100", "--http.max_streams", "80"),
			func(l *Loaded) bool { return l.HTTP.MaxStreams == 80 && l.HTTP.MaxWaiters == 4 }},
		{"connections that fit: streams and waiters stay", with("--http.max_connections", "200"),
			func(l *Loaded) bool { return l.HTTP.MaxStreams == 64 && l.HTTP.MaxWaiters == 64 }},
		{"many streams: connections follow", with("--http.max_streams", "4096"),
			func(l *Loaded) bool { return l.HTTP.MaxConnections == 4096+64+HTTPHeadroom }},
		{"value that failed to decode is not set", with("--shutdown_timeout", "soon", "--shutdown_grace", "15s"),
			nil}, // only shutdown_timeout is wrong: grace 15s does not fail on its default
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := loadArgs(t, tc.args...)
			if tc.check == nil {
				var ke *KeyError
				if !errors.As(err, &ke) || ke.Key != "shutdown_timeout" || errors.As(err, new(Errors)) {
					t.Errorf("error %v, want shutdown_timeout's alone", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(l) {
				t.Errorf("app %+v, http %+v, shutdown_grace %v, shutdown_timeout %v, exec %+v",
					l.App, l.HTTP, l.ShutdownGrace, l.ShutdownTimeout, l.Exec)
			}
		})
	}
}

// Several wrong keys, from every source, are all named at once, each once,
// in the table's order; what a wrong section or key makes wrong below it
// is not named again.
func TestLoadSaysEveryError(t *testing.T) {
	cleanEnv(t)
	t.Setenv("ELECTD_LOG_LEVEL", "verbose")
	f := writeFile(t, "electd.yaml", "zookeeper:\n  session_timout: 5s\nhttp: [a]\nelection:\n  path: services\n  term: 1m\n")
	_, err := loadArgs(t, "--config", f, "--zookeeper.servers", "zk:0", "--zookeeper.chroot", "prod", "--app.health_interval", "10")
	var list Errors
	if !errors.As(err, &list) {
		t.Fatalf("error %v, want Errors", err)
	}
	want := []string{"http", "zookeeper.session_timout", "zookeeper.servers", "zookeeper.chroot", "election.path", "election.term", "log.level", "app.health_interval"}
	var got []string
	for _, ke := range list {
		got = append(got, ke.Key)
	}
	if len(got) != len(want) {
		t.Fatalf("keys %v, want %v:\n%v", got, want, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("error %d names %s, want %s:\n%v", i, got[i], want[i], err)
		}
	}
}

// Errors past maxErrors are counted on one line, not written out.
func TestLoadCutsManyErrors(t *testing.T) {
	cleanEnv(t)
	file := ""
	for i := range 40 {
		file += "unknown_" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ": 1\n"
	}
	_, err := loadArgs(t, append([]string{"--config", writeFile(t, "electd.yaml", file)}, minimal...)...)
	var list Errors
	if !errors.As(err, &list) || len(list) != maxErrors || list[maxErrors-1].Key != "config" {
		t.Fatalf("%d errors, the last %v; want %d, the last counting the rest", len(list), list[len(list)-1], maxErrors)
	}
}
