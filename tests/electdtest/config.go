package electdtest

import (
	"bytes"
	"reflect"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is an electd configuration file. Its fields are configuration.md's keys, spelled
// here rather than taken from cmd/electd, so that the tests say what a user writes. Zero
// fields are left out of the file: electd's defaults apply.
type Config struct {
	ID        string
	Advertise string

	Servers        []string      // zookeeper.servers
	SessionTimeout time.Duration // zookeeper.session_timeout

	Path       string        // election.path
	Mode       string        // election.mode: latch, selector, race
	OnSuspend  string        // election.on_suspend: hold, step-down
	Term       time.Duration // election.term (selector)
	ClaimDelay time.Duration // election.claim_delay
	Observer   bool          // election.candidate: false

	HTTPAddr   string // http.addr; Start and Launch fill in the process's address when empty
	AdminToken string // http.admin_token

	LogLevel  string // log.level
	LogFormat string // log.format: json, text

	ProxyListen      string // proxy.listen
	ProxyApp         string // proxy.app
	ProxyAppProtocol string // proxy.app_protocol: http1, h2c
	ProxyMode        string // proxy.mode: http, tcp
	ProxyPeer        string // proxy.peer_listen
	ProxyAdvertise   string // proxy.advertise
	// ProxyPeerKey is proxy.peer_key; Launch fills in the election's own
	// (PeerKey) when the proxy is on and it is empty.
	ProxyPeerKey         string
	ProxyHoldTime        time.Duration // proxy.hold_time
	ProxyDrainTimeout    time.Duration // proxy.drain_timeout
	ProxyIdle            time.Duration // proxy.idle_timeout
	ProxyMaxConnections  int           // proxy.max_connections
	ProxyResponseTimeout time.Duration // proxy.response_timeout
	ProxyBodyTimeout     time.Duration // proxy.body_timeout
	// The data plane's keys (issue 28): how long a silent peer is believed, the
	// front load balancers whose forwarding headers are kept, and the opt-in
	// resend of a request whose body the application never asked for.
	ProxyPeerTimeout    time.Duration // proxy.peer_timeout
	ProxyTrustedProxies []string      // proxy.trusted_proxies
	ProxyResendUnread   bool          // proxy.resend_unread_body
	ProxyAppMaxInFlight int           // proxy.app_max_in_flight

	ShutdownGrace   time.Duration
	ShutdownTimeout time.Duration
}

// The file's shape: sections as docs/configuration.md nests them, durations as Go writes them.
type (
	yamlFile struct {
		ID              string        `yaml:"id,omitempty"`
		Advertise       string        `yaml:"advertise,omitempty"`
		ZooKeeper       *yamlZK       `yaml:"zookeeper,omitempty"`
		Election        *yamlElection `yaml:"election,omitempty"`
		HTTP            *yamlHTTP     `yaml:"http,omitempty"`
		Log             *yamlLog      `yaml:"log,omitempty"`
		Proxy           *yamlProxy    `yaml:"proxy,omitempty"`
		ShutdownGrace   string        `yaml:"shutdown_grace,omitempty"`
		ShutdownTimeout string        `yaml:"shutdown_timeout,omitempty"`
	}
	yamlZK struct {
		Servers        []string `yaml:"servers,omitempty,flow"`
		SessionTimeout string   `yaml:"session_timeout,omitempty"`
	}
	yamlElection struct {
		Path       string `yaml:"path,omitempty"`
		Mode       string `yaml:"mode,omitempty"`
		OnSuspend  string `yaml:"on_suspend,omitempty"`
		Term       string `yaml:"term,omitempty"`
		ClaimDelay string `yaml:"claim_delay,omitempty"`
		Candidate  *bool  `yaml:"candidate,omitempty"`
	}
	yamlHTTP struct {
		Addr       string `yaml:"addr,omitempty"`
		AdminToken string `yaml:"admin_token,omitempty"`
	}
	yamlLog struct {
		Level  string `yaml:"level,omitempty"`
		Format string `yaml:"format,omitempty"`
	}
	yamlProxy struct {
		Listen          string   `yaml:"listen,omitempty"`
		App             string   `yaml:"app,omitempty"`
		AppProtocol     string   `yaml:"app_protocol,omitempty"`
		Mode            string   `yaml:"mode,omitempty"`
		PeerListen      string   `yaml:"peer_listen,omitempty"`
		Advertise       string   `yaml:"advertise,omitempty"`
		PeerKey         string   `yaml:"peer_key,omitempty"`
		HoldTime        string   `yaml:"hold_time,omitempty"`
		DrainTimeout    string   `yaml:"drain_timeout,omitempty"`
		Idle            string   `yaml:"idle_timeout,omitempty"`
		MaxConnections  int      `yaml:"max_connections,omitempty"`
		ResponseTimeout string   `yaml:"response_timeout,omitempty"`
		BodyTimeout     string   `yaml:"body_timeout,omitempty"`
		PeerTimeout     string   `yaml:"peer_timeout,omitempty"`
		TrustedProxies  []string `yaml:"trusted_proxies,omitempty,flow"`
		ResendUnread    bool     `yaml:"resend_unread_body,omitempty"`
		AppMaxInFlight  int      `yaml:"app_max_in_flight,omitempty"`
	}
)

// YAML renders the configuration file.
func (c Config) YAML() []byte {
	f := yamlFile{
		ID:              c.ID,
		Advertise:       c.Advertise,
		ShutdownGrace:   dur(c.ShutdownGrace),
		ShutdownTimeout: dur(c.ShutdownTimeout),
	}
	if zk := (yamlZK{c.Servers, dur(c.SessionTimeout)}); zk.Servers != nil || zk.SessionTimeout != "" {
		f.ZooKeeper = &zk
	}
	el := yamlElection{Path: c.Path, Mode: c.Mode, OnSuspend: c.OnSuspend, Term: dur(c.Term), ClaimDelay: dur(c.ClaimDelay)}
	if c.Observer {
		el.Candidate = new(bool)
	}
	if el != (yamlElection{}) {
		f.Election = &el
	}
	if h := (yamlHTTP{c.HTTPAddr, c.AdminToken}); h != (yamlHTTP{}) {
		f.HTTP = &h
	}
	if l := (yamlLog{c.LogLevel, c.LogFormat}); l != (yamlLog{}) {
		f.Log = &l
	}
	p := yamlProxy{
		Listen: c.ProxyListen, App: c.ProxyApp, AppProtocol: c.ProxyAppProtocol, Mode: c.ProxyMode, PeerListen: c.ProxyPeer, Advertise: c.ProxyAdvertise, PeerKey: c.ProxyPeerKey,
		HoldTime: dur(c.ProxyHoldTime), DrainTimeout: dur(c.ProxyDrainTimeout), Idle: dur(c.ProxyIdle),
		MaxConnections: c.ProxyMaxConnections, ResponseTimeout: dur(c.ProxyResponseTimeout), BodyTimeout: dur(c.ProxyBodyTimeout),
		PeerTimeout: dur(c.ProxyPeerTimeout), TrustedProxies: c.ProxyTrustedProxies, ResendUnread: c.ProxyResendUnread,
		AppMaxInFlight: c.ProxyAppMaxInFlight,
	}
	if !reflect.ValueOf(p).IsZero() {
		f.Proxy = &p
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		panic("electdtest: encoding a configuration: " + err.Error()) // plain strings cannot fail
	}
	_ = enc.Close()
	return b.Bytes()
}

func dur(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}
