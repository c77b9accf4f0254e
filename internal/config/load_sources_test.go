package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// everyKey sets every key to a value other than its default; the files it
// names are made by setEveryKey.
func everyKey(t *testing.T) map[string]string {
	cert, key := writeKeyPair(t)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("eyJhbGciOiJSUzI1NiJ9.e30.sig\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"id":                        "web-1",
		"advertise":                 "10.0.0.7:8080",
		"zookeeper.servers":         "zk-0:2181, zk-1:2181,zk-2:2181",
		"zookeeper.chroot":          "/prod",
		"zookeeper.session_timeout": "4s",
		"zookeeper.auth":            "electd:s3cret",
		"zookeeper.auth_previous":   "electd:0ld",
		"zookeeper.fix_acl":         "true",
		"zookeeper.tls":             "true",
		"zookeeper.tls_ca_file":     cert,
		"zookeeper.tls_cert_file":   cert,
		"zookeeper.tls_key_file":    key,
		"zookeeper.tls_server_name": "zk.test",
		"zookeeper.session_file":    "/run/electd/session",
		"election.path":             "/services/web",
		"election.mode":             "selector",
		"election.term":             "1m30s",
		"election.on_suspend":       "step-down",
		"election.handoff":          "next",
		"election.claim_delay":      "250ms",
		"election.fencing_offset":   "4294967296",
		"election.candidate":        "false",
		"http.addr":                 "127.0.0.1:4141",
		"http.admin_token":          "t0ken",
		"http.tls_cert_file":        cert,
		"http.tls_key_file":         key,
		"http.max_connections":      "100",
		"http.max_streams":          "10",
		"http.max_waiters":          "20",
		"log.level":                 "debug",
		"log.format":                "text",
		"shutdown_grace":            "2s",
		"shutdown_timeout":          "20s",
		"app.health_url":            "http://127.0.0.1:8080/healthz",
		"app.health_interval":       "5s",
		"app.health_timeout":        "500ms",
		"app.failure_threshold":     "2",
		"app.success_threshold":     "3",
		"exec.kill_timeout":         "7s",
		"exec.on_exit":              "restart",
		// A CA file stands in for the service account's: what is checked
		// at start is that it parses.
		"kubernetes.leader_label":     "electd.io/leader",
		"kubernetes.lease_name":       "web-leader",
		"kubernetes.pod_name":         "web-1", // the id: participant_gate maps ids to pods
		"kubernetes.namespace":        "prod",
		"kubernetes.api_server":       "https://10.96.0.1:443",
		"kubernetes.token_file":       token,
		"kubernetes.ca_file":          cert,
		"kubernetes.recheck_interval": "30s",
		"kubernetes.participant_gate": "true",
		"proxy.listen":                "127.0.0.1:4041",
		"proxy.mode":                  "tcp",
		"proxy.app":                   "127.0.0.1:8080",
		"proxy.peer_listen":           "127.0.0.1:4042",
		"proxy.peer_key":              testPeerKey,
		"proxy.advertise":             "10.0.0.7:4042",
		"proxy.hold_time":             "3s",
		"proxy.drain_timeout":         "1s",
		"proxy.max_held":              "100",
		"proxy.max_connections":       "200",
		"proxy.dial_timeout":          "500ms",
		"proxy.client_header_timeout": "5s",
		"proxy.response_timeout":      "20s",
		"proxy.idle_timeout":          "2m",
		"proxy.body_timeout":          "20s",
		"proxy.max_header_bytes":      "16384",
		"proxy.max_peer_connections":  "32",
		"proxy.peer_streams":          "100",
		"proxy.peer_timeout":          "3s",
		"proxy.client_body_timeout":   "4s",
		"proxy.buffer_size":           "65536",
		"proxy.buffer_total":          "1048576",
		"proxy.resend_unread_body":    "true",
		"proxy.app_protocol":          "h2c",
		"proxy.trusted_proxies":       "10.0.0.0/8,192.168.1.7",
		"proxy.app_timeout_stepdown":  "5",
		"proxy.app_max_in_flight":     "16",
		"listen_hold_dir":             "/run/electd-listen",
	}
}

func TestEveryKeyIsInEveryKey(t *testing.T) {
	every := everyKey(t)
	secretFiles := map[string]bool{} // exclude their secrets: tested apart
	for _, k := range Keys() {
		secretFiles[k.File] = true
	}
	for _, k := range Keys() {
		if _, ok := every[k.Name]; !ok && !secretFiles[k.Name] {
			t.Errorf("everyKey lacks %s", k.Name)
		}
	}
}

func checkEveryKey(t *testing.T, c *Loaded, every map[string]string) {
	t.Helper()
	want := Config{ID: "web-1", Advertise: "10.0.0.7:8080"}
	z := &want.ZooKeeper
	z.Servers = []string{"zk-0:2181", "zk-1:2181", "zk-2:2181"}
	z.Chroot, z.SessionTimeout, z.Auth, z.FixACL = "/prod", 4*time.Second, "electd:s3cret", true
	z.AuthPrevious = "electd:0ld"
	z.TLS, z.TLSServerName, z.SessionFile = true, "zk.test", "/run/electd/session"
	z.TLSCAFile, z.TLSCertFile, z.TLSKeyFile = every["zookeeper.tls_ca_file"], every["zookeeper.tls_cert_file"], every["zookeeper.tls_key_file"]
	e := &want.Election
	e.Path, e.Mode, e.Term, e.OnSuspend = "/services/web", "selector", 90*time.Second, "step-down"
	e.Handoff = "next"
	e.ClaimDelay, e.FencingOffset = 250*time.Millisecond, 1<<32
	want.App = App{HealthURL: "http://127.0.0.1:8080/healthz", HealthInterval: 5 * time.Second,
		HealthTimeout: 500 * time.Millisecond, FailureThreshold: 2, SuccessThreshold: 3}
	want.Exec = Exec{KillTimeout: 7 * time.Second, OnExit: "restart"}
	h := &want.HTTP
	h.Addr, h.AdminToken = "127.0.0.1:4141", "t0ken"
	h.TLSCertFile, h.TLSKeyFile = every["http.tls_cert_file"], every["http.tls_key_file"]
	h.MaxConnections, h.MaxStreams, h.MaxWaiters = 100, 10, 20
	want.Log.Level, want.Log.Format = "debug", "text"
	want.ShutdownGrace, want.ShutdownTimeout = 2*time.Second, 20*time.Second
	want.ListenHoldDir = "/run/electd-listen"
	want.Kubernetes = Kubernetes{
		LeaderLabel: "electd.io/leader", LeaseName: "web-leader", PodName: "web-1", Namespace: "prod",
		APIServer: "https://10.96.0.1:443", TokenFile: every["kubernetes.token_file"], CAFile: every["kubernetes.ca_file"],
		RecheckInterval: 30 * time.Second, ParticipantGate: true,
	}
	want.Proxy = Proxy{
		Listen: "127.0.0.1:4041", Mode: "tcp", App: "127.0.0.1:8080", PeerListen: "127.0.0.1:4042", Advertise: "10.0.0.7:4042", PeerKey: testPeerKey,
		HoldTime: 3 * time.Second, DrainTimeout: time.Second, MaxHeld: 100, MaxConnections: 200,
		DialTimeout: 500 * time.Millisecond, ClientHeaderTimeout: 5 * time.Second, ResponseTimeout: 20 * time.Second,
		IdleTimeout: 2 * time.Minute, BodyTimeout: 20 * time.Second, MaxHeaderBytes: 16384,
		MaxPeerConnections: 32, PeerStreams: 100, PeerTimeout: 3 * time.Second, ClientBodyTimeout: 4 * time.Second,
		BufferSize: 65536, BufferTotal: 1 << 20, ResendUnreadBody: true, TrustedProxies: []string{"10.0.0.0/8", "192.168.1.7"},
		AppTimeoutStepDown: 5, AppProtocol: "h2c", AppMaxInFlight: 16,
	}
	if !reflect.DeepEqual(c.Config, want) {
		t.Errorf("\n got %+v\nwant %+v", c.Config, want)
	}
	if got, want := c.Prepared.Election.Path, "/prod/services/web"; got != want {
		t.Errorf("path with chroot = %q, want %q", got, want)
	}
	s := c.Prepared.Session
	if s.TLS == nil || s.TLS.ServerName != "zk.test" || s.TLS.RootCAs == nil || s.TLS.GetClientCertificate == nil || !s.FixACL || s.AuthPrevious != "electd:0ld" {
		t.Errorf("session config: %+v", s)
	}
	if c.Prepared.HTTPCert == nil {
		t.Error("no HTTP certificate")
	}
	if p := c.Prepared.Proxy; p.Listen != "127.0.0.1:4041" || p.Mode != "tcp" || p.MaxHeaderBytes != 16384 || c.Prepared.Election.Proxy != "10.0.0.7:4042" {
		t.Errorf("proxy config: %+v, published %q", p, c.Prepared.Election.Proxy)
	}
}

func TestEnvironmentAloneSetsEveryKey(t *testing.T) {
	cleanEnv(t)
	every := everyKey(t)
	for k, v := range every {
		t.Setenv(EnvName(k), v)
	}
	c, err := loadArgs(t)
	if err != nil {
		t.Fatal(err)
	}
	checkEveryKey(t, c, every)
}

func TestFlagsAloneSetEveryKey(t *testing.T) {
	cleanEnv(t)
	every := everyKey(t)
	var args []string
	for k, v := range every {
		args = append(args, "--"+k+"="+v)
	}
	c, err := loadArgs(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	checkEveryKey(t, c, every)
}

func TestFileAloneSetsEveryKey(t *testing.T) {
	cleanEnv(t)
	every := everyKey(t)
	var b strings.Builder
	section := ""
	for _, k := range Keys() {
		v, ok := every[k.Name]
		if !ok {
			continue
		}
		if k.Section() != section && k.Section() != "" {
			b.WriteString(k.Section() + ":\n")
		}
		section = k.Section()
		if section != "" {
			b.WriteString("  ")
		}
		if k.Type == "list" {
			v = "[" + v + "]"
		}
		b.WriteString(k.Leaf() + ": " + v + "\n")
	}
	c, err := loadArgs(t, "--config", writeFile(t, "electd.yaml", b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	checkEveryKey(t, c, every)
}
