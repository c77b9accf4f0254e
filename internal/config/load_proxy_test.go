package config

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Each proxy tag names the proxy.Config field that the key's value lands
// in, and each field the mapping sets is named by a tag.
func TestProxyTags(t *testing.T) {
	var zero, c Config
	distinct(&c)
	got, base := reflect.ValueOf(c.proxy()), reflect.ValueOf(zero.proxy())
	tagged := map[string]bool{}
	for _, k := range table {
		if k.Proxy == "" {
			continue
		}
		tagged[k.Proxy] = true
		f := got.FieldByName(k.Proxy)
		if !f.IsValid() {
			t.Errorf("%s: proxy field %s does not exist", k.Name, k.Proxy)
			continue
		}
		want := k.field(&c)
		if f.Kind() == reflect.String {
			f, want = reflect.ValueOf(f.String()), reflect.ValueOf(want.String())
		}
		if !reflect.DeepEqual(f.Interface(), want.Interface()) {
			t.Errorf("%s: proxy field %s = %v, want the key's value %v", k.Name, k.Proxy, f, want)
		}
	}
	for i := range got.NumField() {
		name := got.Type().Field(i).Name
		if !got.Type().Field(i).IsExported() {
			continue
		}
		if !reflect.DeepEqual(got.Field(i).Interface(), base.Field(i).Interface()) && !tagged[name] {
			t.Errorf("proxy.Config.%s is set from the keys but no key's proxy tag names it", name)
		}
	}
}

func TestProxyOffByDefault(t *testing.T) {
	cleanEnv(t)
	c, err := loadArgs(t, minimal...)
	if err != nil {
		t.Fatal(err)
	}
	if c.Prepared.Proxy.Listen != "" || c.Prepared.Election.Proxy != "" {
		t.Errorf("proxy on by default: %+v, publishes %q", c.Prepared.Proxy, c.Prepared.Election.Proxy)
	}
}

// What peers dial: $POD_IP with the peer port (proxy.peer_listen, by
// default the port after proxy.listen's), else the peer address when it
// names a host; set, it is taken as it is.
func TestProxyAdvertise(t *testing.T) {
	for _, tc := range []struct {
		name  string
		podIP string
		args  []string
		want  string
	}{
		{"pod IP", "10.1.2.3", []string{"--proxy.listen", ":4041"}, "10.1.2.3:4042"},
		{"pod IPv6", "fd00::7", []string{"--proxy.listen", ":4041"}, "[fd00::7]:4042"},
		{"listen host", "", []string{"--proxy.listen", "127.0.0.1:4041"}, "127.0.0.1:4042"},
		{"peer port set", "10.1.2.3", []string{"--proxy.listen", ":4041", "--proxy.peer_listen", ":5000"}, "10.1.2.3:5000"},
		{"tcp: the peer port", "10.1.2.3", []string{"--proxy.listen", ":5432", "--proxy.mode", "tcp", "--proxy.peer_listen", ":4042"}, "10.1.2.3:4042"},
		{"tcp: the next port", "10.1.2.3", []string{"--proxy.listen", ":5432", "--proxy.mode", "tcp"}, "10.1.2.3:5433"},
		{"any free port", "", []string{"--proxy.listen", "127.0.0.1:0"}, "127.0.0.1:0"},
		{"set", "10.1.2.3", []string{"--proxy.listen", ":4041", "--proxy.advertise", "web-0.web:4041"}, "web-0.web:4041"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv("POD_IP", tc.podIP)
			c, err := loadArgs(t, with(append(tc.args, "--proxy.app", "127.0.0.1:8080")...)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Prepared.Election.Proxy; got != tc.want {
				t.Errorf("published %q, want %q", got, tc.want)
			}
		})
	}
}

// proxy.drain_timeout and proxy.max_held follow proxy.hold_time and
// proxy.max_connections when not set; what is set is kept.
func TestProxyDerivedDefaults(t *testing.T) {
	on := []string{"--proxy.listen", "127.0.0.1:4041", "--proxy.app", "127.0.0.1:8080"}
	for _, tc := range []struct {
		args      []string
		drain     time.Duration
		held, max int
	}{
		{nil, 2 * time.Second, 512, 1024},
		{[]string{"--proxy.hold_time", "1s"}, 500 * time.Millisecond, 512, 1024},
		{[]string{"--proxy.hold_time", "10ms"}, 5 * time.Millisecond, 512, 1024},
		{[]string{"--proxy.drain_timeout", "1m"}, time.Minute, 512, 1024},
		{[]string{"--proxy.max_held", "2000"}, 2 * time.Second, 2000, 2000},
		{[]string{"--proxy.max_connections", "100"}, 2 * time.Second, 100, 100},
		{[]string{"--proxy.max_connections", "100", "--proxy.max_held", "10"}, 2 * time.Second, 10, 100},
		{[]string{"--proxy.hold_time", "1s", "--proxy.drain_timeout", "300ms"}, 300 * time.Millisecond, 512, 1024},
	} {
		cleanEnv(t)
		c, err := loadArgs(t, with(append(on, tc.args...)...)...)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if len(tc.args) == 2 && tc.args[0] == "--proxy.drain_timeout" && c.Proxy.HoldTime != 2*time.Minute {
			t.Errorf("%v: hold time %v, want 2m: twice the drain", tc.args, c.Proxy.HoldTime)
		}
		if p := c.Proxy; p.DrainTimeout != tc.drain || p.MaxHeld != tc.held || p.MaxConnections != tc.max {
			t.Errorf("%v: drain %v, held %d, connections %d; want %v, %d, %d", tc.args, p.DrainTimeout, p.MaxHeld, p.MaxConnections, tc.drain, tc.held, tc.max)
		}
	}
}

// An unset proxy.hold_time covers a leader that crashed: the session
// timeout, ZooKeeper's expiry and the election (must-have 8 of issue 37);
// a drain timeout or a hold time given wins.
func TestProxyHoldCoversACrash(t *testing.T) {
	on := []string{"--proxy.listen", "127.0.0.1:4041", "--proxy.app", "127.0.0.1:8080"}
	for _, tc := range []struct {
		args []string
		hold time.Duration
	}{
		{nil, 17 * time.Second},
		{[]string{"--zookeeper.session_timeout", "4s"}, 8 * time.Second},
		{[]string{"--zookeeper.session_timeout", "10m"}, 5 * time.Minute}, // proxy.MaxHoldTime
		{[]string{"--proxy.drain_timeout", "20s"}, 40 * time.Second},
		{[]string{"--proxy.hold_time", "3s"}, 3 * time.Second},
	} {
		cleanEnv(t)
		c, err := loadArgs(t, with(append(on, tc.args...)...)...)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if c.Proxy.HoldTime != tc.hold {
			t.Errorf("%v: hold time %v, want %v", tc.args, c.Proxy.HoldTime, tc.hold)
		}
	}
}

func TestBadProxyConfigNamesTheKey(t *testing.T) {
	on := func(extra ...string) []string {
		return with(append([]string{"--proxy.listen", "127.0.0.1:4041", "--proxy.app", "127.0.0.1:8080"}, extra...)...)
	}
	for _, c := range []badCase{
		{name: "app without listen", args: with("--proxy.app", "127.0.0.1:8080"), key: "proxy.app"},
		{name: "advertise without listen", args: with("--proxy.advertise", "10.0.0.7:4041"), key: "proxy.advertise"},
		{name: "hold time out of range while off", args: with("--proxy.hold_time", "1h"), key: "proxy.hold_time"},
		{name: "listen without app", args: with("--proxy.listen", "127.0.0.1:4041"), key: "proxy.app"},
		{name: "listen not host:port", args: with("--proxy.listen", "4041", "--proxy.app", "127.0.0.1:8080"), key: "proxy.listen"},
		{name: "app without host", args: with("--proxy.listen", "127.0.0.1:4041", "--proxy.app", ":8080"), key: "proxy.app"},
		{name: "app port 0", args: on("--proxy.app", "127.0.0.1:0"), key: "proxy.app"},
		{name: "unknown mode", args: on("--proxy.mode", "udp"), key: "proxy.mode"},
		{name: "no next port for peers", args: with("--proxy.listen", "127.0.0.1:65535", "--proxy.app", "127.0.0.1:8080"), key: "proxy.peer_listen"},
		{name: "peer_listen not host:port", args: on("--proxy.peer_listen", "4042"), key: "proxy.peer_listen"},
		{name: "peer_listen on the listen port", args: on("--proxy.peer_listen", "127.0.0.1:4041"), key: "proxy.peer_listen"},
		{name: "peer_listen on the listen port, every host", args: on("--proxy.peer_listen", ":4041", "--proxy.advertise", "10.0.0.7:4041"), key: "proxy.peer_listen"},
		{name: "tcp: peer_listen on the listen port", args: on("--proxy.mode", "tcp", "--proxy.peer_listen", "127.0.0.1:4041"), key: "proxy.peer_listen"},
		{name: "buffer below 1 KiB", args: on("--proxy.buffer_size", "100"), key: "proxy.buffer_size"},
		{name: "buffer total below the buffer", args: on("--proxy.buffer_size", "4194304", "--proxy.buffer_total", "1048576"), key: "proxy.buffer_total"},
		{name: "a trusted proxy that is no address", args: on("--proxy.trusted_proxies", "10.0.0.0/8,lb.local"), key: "proxy.trusted_proxies"},
		{name: "peer timeout below 10ms", args: on("--proxy.peer_timeout", "1ms"), key: "proxy.peer_timeout"},
		{name: "no answer timeouts", args: on("--proxy.app_timeout_stepdown", "0"), key: "proxy.app_timeout_stepdown"},
		{name: "negative in-flight cap", args: on("--proxy.app_max_in_flight", "-1"), key: "proxy.app_max_in_flight"},
		{name: "in-flight cap past the cap", args: on("--proxy.app_max_in_flight", "1048577"), key: "proxy.app_max_in_flight"},
		{name: "hold time zero", args: on("--proxy.hold_time", "0s"), key: "proxy.hold_time"},
		{name: "hold time past 5m", args: on("--proxy.hold_time", "6m"), key: "proxy.hold_time"},
		{name: "hold time below 10ms", args: on("--proxy.hold_time", "5ms"), key: "proxy.hold_time"},
		{name: "drain not shorter than hold", args: on("--proxy.hold_time", "1s", "--proxy.drain_timeout", "1s"), key: "proxy.drain_timeout"},
		{name: "held past connections", args: on("--proxy.max_connections", "10", "--proxy.max_held", "11"), key: "proxy.max_held"},
		{name: "connections past the cap", args: on("--proxy.max_connections", "2000000"), key: "proxy.max_connections"},
		{name: "negative connections", args: on("--proxy.max_connections", "-1"), key: "proxy.max_connections"},
		{name: "header bytes too small", args: on("--proxy.max_header_bytes", "100"), key: "proxy.max_header_bytes"},
		{name: "idle timeout below 1s", args: on("--proxy.idle_timeout", "10ms"), key: "proxy.idle_timeout"},
		{name: "dial timeout past 1m", args: on("--proxy.dial_timeout", "2m"), key: "proxy.dial_timeout"},
		{name: "no address to advertise", args: with("--proxy.listen", ":4041", "--proxy.app", "127.0.0.1:8080"), key: "proxy.advertise"},
		{name: "advertise every address", args: on("--proxy.advertise", "0.0.0.0:4041"), key: "proxy.advertise"},
		{name: "advertise without port", args: on("--proxy.advertise", "10.0.0.7"), key: "proxy.advertise"},
		{name: "advertise port 0", args: on("--proxy.advertise", "10.0.0.7:0"), key: "proxy.advertise"},
		{name: "advertise control character", args: on("--proxy.advertise", "10.0.0.7:4041\x01"), key: "proxy.advertise"},
		{name: "listen on the API's port", args: with("--proxy.listen", ":4040", "--proxy.app", "127.0.0.1:8080", "--proxy.advertise", "10.0.0.7:4040"), key: "proxy.listen"},
		{name: "from the environment", args: minimal, env: map[string]string{"ELECTD_PROXY_LISTEN": "127.0.0.1:4041", "ELECTD_PROXY_APP": "127.0.0.1:8080", "ELECTD_PROXY_PEER_KEY": testPeerKey, "ELECTD_PROXY_HOLD_TIME": "5"}, key: "proxy.hold_time"},
	} {
		t.Run(c.name, func(t *testing.T) { checkBad(t, c) })
	}
}

// Every wrong proxy key is named at once, each on its line.
func TestEveryBadProxyKeyIsNamed(t *testing.T) {
	cleanEnv(t)
	_, err := loadArgs(t, with("--proxy.listen", "127.0.0.1:4041", "--proxy.app", "nohost", "--proxy.mode", "udp",
		"--proxy.hold_time", "6m", "--proxy.max_connections", "0", "--proxy.max_header_bytes", "10")...)
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("want several errors, got %v", err)
	}
	named := map[string]bool{}
	for _, e := range es {
		named[e.Key] = true
	}
	for _, k := range []string{"proxy.app", "proxy.mode", "proxy.hold_time", "proxy.max_connections", "proxy.max_header_bytes"} {
		if !named[k] {
			t.Errorf("%s not named in:\n%v", k, err)
		}
	}
	if strings.Count(err.Error(), "\n")+1 != len(es) {
		t.Errorf("not one line per error:\n%v", err)
	}
}

// The proxy never starts without proxy.peer_key: its peer port would take
// forwards from anyone. The one line names the key, its flag, its
// variable and how to make one; a short key is named as it was given.
func TestPeerKeyRequired(t *testing.T) {
	cleanEnv(t)
	on := with("--proxy.listen", "127.0.0.1:4041", "--proxy.app", "127.0.0.1:8080")
	_, err := Load(on, nil)
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != "proxy.peer_key" {
		t.Fatalf("error %v, want one naming proxy.peer_key", err)
	}
	msg := err.Error()
	for _, want := range []string{"--proxy.peer_key", "ELECTD_PROXY_PEER_KEY", "openssl rand -base64 32"} {
		if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("%q is not one line that says %s", msg, want)
		}
	}
	short := testPeerKey[:len(testPeerKey)-1]
	for _, c := range []badCase{
		{name: "short", args: slices.Concat(on, []string{"--proxy.peer_key", short}), key: "proxy.peer_key"},
		{name: "short file", args: slices.Concat(on, []string{"--proxy.peer_key_file", writeFile(t, "key", short+"\n")}), key: "proxy.peer_key_file"},
		{name: "both", args: slices.Concat(on, []string{"--proxy.peer_key", testPeerKey, "--proxy.peer_key_file", writeFile(t, "key2", testPeerKey)}), key: "proxy.peer_key_file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkBad(t, c)
			if _, err := loadArgs(t, c.args...); strings.Contains(err.Error(), short) {
				t.Errorf("the error quotes the key: %v", err)
			}
		})
	}
	if _, err := loadArgs(t, slices.Concat(on, []string{"--proxy.peer_key_file", writeFile(t, "key3", testPeerKey+"\n")})...); err != nil {
		t.Fatalf("a key from a file: %v", err)
	}
}
