package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// Without proxy.listen every other proxy key is refused alike, from every
// source, whatever its value: the default's too, since it was set.
func TestEveryProxyKeyNeedsListen(t *testing.T) {
	examples := exampleConfig()
	for _, k := range table {
		if k.Section() != "proxy" || k.Name == "proxy.listen" {
			continue
		}
		v := format(k.field(&examples), k.Type)
		v = strings.Trim(strings.Trim(v, "[]"), `"`)
		if v == "" {
			v = "10.0.0.7:4042"
		}
		for _, src := range []struct {
			name string
			c    badCase
		}{
			{"flag", badCase{args: with("--"+k.Name, v)}},
			{"environment", badCase{args: minimal, env: map[string]string{k.Env: v}}},
			{"file", badCase{args: minimal, file: fmt.Sprintf("proxy:\n  %s: %q\n", k.Leaf(), v)}},
		} {
			t.Run(k.Name+"/"+src.name, func(t *testing.T) {
				if got, want := loadErr(t, src.c), k.Name+": only meaningful with proxy.listen (the proxy is off)"; got != want {
					t.Errorf("got %q, want the one error %q", got, want)
				}
			})
		}
	}
}

// A proxy.app that is the proxy itself (its clients' port, its peers'
// port, its advertised address) or electd's API is refused, through the
// ways one host is spelt.
func TestProxyPointingAtItself(t *testing.T) {
	for _, tc := range []struct {
		name, listen, app, podIP string
		extra                    []string
		want                     string // "" accepted, else what the message names
	}{
		{"equal", "127.0.0.1:4041", "127.0.0.1:4041", "", nil, "proxy.listen"},
		{"localhost for 127.0.0.1", "127.0.0.1:4041", "localhost:4041", "", nil, "proxy.listen"},
		{"127.0.0.1 for localhost", "localhost:4041", "127.0.0.1:4041", "", nil, "proxy.listen"},
		{"every address, loopback", ":4041", "127.0.0.1:4041", "10.0.0.7", nil, "proxy.listen"},
		{"0.0.0.0, another loopback", "0.0.0.0:4041", "127.0.0.2:4041", "10.0.0.7", nil, "proxy.listen"},
		{"every address, localhost", "[::]:4041", "localhost:4041", "10.0.0.7", nil, "proxy.listen"},
		{"every address, the pod's IP", ":4041", "10.0.0.7:4041", "10.0.0.7", nil, "proxy.listen"},
		{"every address, dialled as 0.0.0.0", ":4041", "0.0.0.0:4041", "10.0.0.7", nil, "proxy.listen"},
		{"IPv6 loopback", "[::1]:4041", "localhost:4041", "", nil, "proxy.listen"},
		{"the derived peer port", "127.0.0.1:4041", "127.0.0.1:4042", "", nil, "proxy.peer_listen"},
		{"the peer port set", "127.0.0.1:4041", "localhost:5000", "", []string{"--proxy.peer_listen", "127.0.0.1:5000"}, "proxy.peer_listen"},
		{"the advertised address", "127.0.0.1:4041", "proxy.local:4042", "", []string{"--proxy.advertise", "proxy.local:4042"}, "proxy.advertise"},
		{"electd's API", "127.0.0.1:4041", "127.0.0.1:4040", "", []string{"--http.addr", ":4040"}, "http.addr"},
		{"another port", "127.0.0.1:4041", "127.0.0.1:8080", "", nil, ""},
		{"another loopback address", "127.0.0.1:4041", "127.0.0.2:4041", "", nil, ""},
		{"another host, every address", ":4041", "10.0.0.8:4041", "10.0.0.7", nil, ""},
		{"another host", "10.0.0.7:4041", "10.0.0.8:4041", "", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv("POD_IP", tc.podIP)
			_, err := loadArgs(t, with(append([]string{"--proxy.listen", tc.listen, "--proxy.app", tc.app}, tc.extra...)...)...)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != "proxy.app" || !strings.Contains(ke.Error(), "send every request to itself") ||
				!strings.Contains(ke.Error(), tc.want) {
				t.Fatalf("got %v; want one error naming proxy.app, the loop and %s", err, tc.want)
			}
		})
	}
}

// A misspelt key is named with the key it likely meant, from a file, a
// flag or the environment; a name far from every key, or a variable that
// Kubernetes injects for a Service named electd, gets no suggestion.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    badCase
		want string
	}{
		{"file: a key", badCase{args: minimal, file: "zookeeper:\n  session_timout: 5s\n", key: "zookeeper.session_timout"}, "did you mean zookeeper.session_timeout?"},
		{"file: a section", badCase{args: minimal, file: "electon:\n  path: /x\n", key: "electon"}, "did you mean election?"},
		{"file: the wrong section", badCase{args: minimal, file: "session_timeout: 5s\n", key: "session_timeout"}, "did you mean zookeeper.session_timeout?"},
		{"file: a longer slip", badCase{args: minimal, file: "http:\n  address: :4040\n", key: "http.address"}, "did you mean http.addr?"},
		{"flag: a key", badCase{args: with("--zookeeper.server", "a:1"), key: "--zookeeper.server"}, "did you mean --zookeeper.servers?"},
		{"flag: an option", badCase{args: with("--valdate"), key: "--valdate"}, "did you mean --validate?"},
		{"flag: with =", badCase{args: with("--proxy.holdtime=1s"), key: "--proxy.holdtime"}, "did you mean --proxy.hold_time?"},
		{"environment", badCase{args: minimal, env: map[string]string{"ELECTD_ZOOKEEPER_AUTH_FIEL": "/x"}, key: "ELECTD_ZOOKEEPER_AUTH_FIEL"},
			"did you mean ELECTD_ZOOKEEPER_AUTH_FILE (zookeeper.auth_file)?"},
		{"file: far from every key", badCase{args: minimal, file: "colour: blue\n", key: "colour"}, ""},
		{"flag: far from every key", badCase{args: with("--colour", "blue"), key: "--colour"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkBad(t, tc.c)
			err := loadErr(t, tc.c)
			switch {
			case tc.want == "" && strings.Contains(err, "did you mean"):
				t.Errorf("%s: a suggestion for a name far from every key", err)
			case !strings.Contains(err, tc.want):
				t.Errorf("%s: want %q", err, tc.want)
			}
		})
	}
	// Not slips: Kubernetes' service links, exec mode's variables, names far
	// from every key. They only warn.
	cleanEnv(t)
	env := []string{"ELECTD_PORT=tcp://10.0.0.1:4040", "ELECTD_SERVICE_HOST=10.0.0.1", "ELECTD_SERVICE_PORT=4040",
		"ELECTD_SERVICE_PORT_HTTP=4040", "ELECTD_PORT_4040_TCP=tcp://10.0.0.1:4040", "ELECTD_PORT_4040_TCP_ADDR=10.0.0.1",
		"ELECTD_PORT_4040_TCP_PORT=4040", "ELECTD_PORT_4040_TCP_PROTO=tcp", "ELECTD_FENCING_TOKEN=7", "ELECTD_LEADER_ID=web-1",
		"ELECTD_LEADER_NODE=n", "ELECTD_LEADER_SESSION=0x1", "ELECTD_FOO=1"}
	l, err := Load(minimal, env)
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	if len(l.UnknownEnv) != len(env) {
		t.Errorf("warned about %v, want every one of %v", l.UnknownEnv, env)
	}
}

func loadErr(t *testing.T, c badCase) string {
	t.Helper()
	cleanEnv(t)
	for k, v := range c.env {
		t.Setenv(k, v)
	}
	args := c.args
	if c.file != "" {
		args = append([]string{"--config", writeFile(t, "electd.yaml", c.file)}, args...)
	}
	_, err := loadArgs(t, args...)
	return fmt.Sprint(err)
}

// goIsm is what a message must never say: Go's names for what the user
// knows as keys (the fields the keys set, Go types, package names).
func goIsm(t *testing.T) *regexp.Regexp {
	t.Helper()
	fields := map[string]bool{}
	for _, k := range table {
		for _, f := range []string{k.Engine, k.Kube, k.Proxy} {
			if f != "" {
				fields[f] = true
			}
		}
	}
	var alt []string
	for f := range fields {
		alt = append(alt, regexp.QuoteMeta(f))
	}
	return regexp.MustCompile(`\b(` + strings.Join(alt, "|") + `)\b|Go struct|struct field|interface \{\}|map\[|\[\]string|` +
		`time\.Duration|\bint64\b|mapstructure|viper|\b(config|election|kube|proxy|fielderr)\.[A-Z]|expected type`)
}

// Every message names keys, never Go: for every key, values that are
// wrong in each way a value can be (its type, its bounds, its relations to
// other keys), from flags and from a file, each message is checked
// outside the values it quotes.
func TestMessagesNameKeysNotGo(t *testing.T) {
	bad := goIsm(t)
	wrong := map[string][]string{
		"string":   {"\x01", "x", "a b", strings.Repeat("x", 5000), "0.0.0.0:0"},
		"int":      {"x", "-1", "0", "1.5", "99999999999999999999"},
		"duration": {"x", "10", "-1s", "0s", "1ns", "1000h"},
		"bool":     {"maybe", "1"},
		"list":     {"x", ",", "a b:1", "300.1.1.1:2181"},
	}
	proxyOnArgs := []string{"--proxy.listen", "127.0.0.1:4041", "--proxy.app", "127.0.0.1:8080"}
	relations := [][]string{
		{"--proxy.hold_time", "1s", "--proxy.drain_timeout", "1s"},
		{"--proxy.max_connections", "10", "--proxy.max_held", "11"},
		{"--proxy.buffer_size", "4194304", "--proxy.buffer_total", "1048576"},
		{"--proxy.peer_listen", "127.0.0.1:4041"},
		{"--proxy.app", "127.0.0.1:4041"},
		{"--election.term", "1s"},
		{"--http.max_connections", "20", "--http.max_streams", "10", "--http.max_waiters", "10"},
		{"--app.health_interval", "1s", "--app.health_timeout", "2s"},
		{"--shutdown_grace", "10s", "--shutdown_timeout", "10s"},
		{"--kubernetes.leader_label", "electd.io/leader"},
		{"--kubernetes.lease_name", "x"},
		{"--zookeeper.tls_ca_file", "/x"},
		{"--zookeeper.fix_acl", "true"},
	}
	seen := 0
	check := func(args []string, file string) {
		cleanEnv(t)
		if file != "" {
			args = append([]string{"--config", writeFile(t, "electd.yaml", file)}, args...)
		}
		_, err := loadArgs(t, args...)
		if err == nil {
			return
		}
		for line := range strings.Lines(err.Error()) {
			seen++
			if m := bad.FindString(quoted.ReplaceAllString(line, `""`)); m != "" {
				t.Errorf("%q says %q:\n%s", args, m, line)
			}
		}
	}
	// Keys are wrong a chunk at a time, so that each message is seen
	// within maxErrors and the test stays quick.
	const chunk = maxErrors - 2
	for lo := 0; lo < len(table); lo += chunk {
		keys := table[lo:min(lo+chunk, len(table))]
		for typ, values := range wrong {
			for _, v := range values {
				args := with(proxyOnArgs...)
				for _, k := range keys {
					if k.Type == typ {
						args = append(args, "--"+k.Name, v)
					}
				}
				check(args, "")
			}
		}
		// From a file: a list or a mapping where a value belongs, and the reverse.
		for _, v := range []string{"[1, 2]", "{a: 1}", "1.5", "true"} {
			var flat, nested strings.Builder
			section := ""
			for _, k := range keys {
				fmt.Fprintf(&flat, "%s: %s\n", k.Name, v)
				if sec := k.Section(); sec != section {
					if sec != "" {
						fmt.Fprintf(&nested, "%s:\n", sec)
					}
					section = sec
				}
				if section != "" {
					nested.WriteString("  ")
				}
				fmt.Fprintf(&nested, "%s: %s\n", k.Leaf(), v)
			}
			check(minimal, flat.String())
			check(minimal, nested.String())
		}
	}
	for _, r := range relations {
		check(with(append(append([]string{}, proxyOnArgs...), r...)...), "")
		check(with(r...), "")
	}
	if seen < 300 {
		t.Errorf("%d messages checked; the wrong values no longer make most keys fail", seen)
	}
	t.Logf("%d messages checked", seen)
}
