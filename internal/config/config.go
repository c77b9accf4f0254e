// Package config is electd's configuration: every key's name, type,
// default, environment variable, help text and example value, in one place
// (the tagged Config struct below), and the checks that are not the
// election engine's. Keys() reads the table from the struct; --help,
// --validate, config.example.yaml (go generate) and the deploy/k8s tests are
// all built from it. Load is the one place that reads the sources (file <
// environment < flags, merged by viper) and returns the configuration
// checked, every error named by its key. See docs/design/http-contract.md,
// "Configuration".
package config

//go:generate go run ./gen -o ../../config.example.yaml -doc ../../docs/configuration.md

import "time"

// Config is electd's configuration. Each leaf field is one key; its tags:
//
//	mapstructure  the key's last segment (sections nest: zookeeper.servers)
//	default       the default as written in a file; absent for required or
//	              computed keys, and where the package the key configures
//	              declares it (packageDefaults)
//	help          one line for --help and config.example.yaml
//	example       a value config.example.yaml shows instead of the default
//	key           options: required; secret (masked, trimmed, never quoted);
//	              file=KEY (a secret that KEY may name a file for)
//	computed      the default's description when it is computed at start
//	engine        the zksession.Config or election.Config field set
//	              from the key; the engine validates it (*election.FieldError)
//	kube          the kube.Config field set from the key; kube validates it
//	              (*kube.FieldError)
//	proxy         the proxy.Config field set from the key; proxy validates it
//	              (*proxy.FieldError)
type Config struct {
	ID        string    `mapstructure:"id" computed:"$POD_NAME, else the host name" example:"web-1" engine:"ID" help:"this participant's id, written as its node's data: printable UTF-8, at most 1024 bytes"`
	Advertise string    `mapstructure:"advertise" default:"" engine:"Advertise" help:"data published with the id, e.g. the app's address, so followers can find the leader (at most 4096 bytes)"`
	ZooKeeper ZooKeeper `mapstructure:"zookeeper"`
	Election  Election  `mapstructure:"election"`
	HTTP      HTTP      `mapstructure:"http"`
	Log       Log       `mapstructure:"log"`
	App       App       `mapstructure:"app"`
	Exec      Exec      `mapstructure:"exec"`

	Kubernetes Kubernetes `mapstructure:"kubernetes"`
	Proxy      Proxy      `mapstructure:"proxy"`

	ShutdownGrace   time.Duration `mapstructure:"shutdown_grace" default:"0s" help:"on SIGTERM, answer 503 this long before releasing leadership; shorter than shutdown_timeout"`
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout" default:"10s" help:"how long shutdown after SIGTERM may take in all, at most 10m; unset, 10s, or shutdown_grace + exec.kill_timeout (electd run) + 5s when either is not shorter than 10s"`
	ListenHoldDir   string        `mapstructure:"listen_hold_dir" default:"" help:"directory shared with electd hold-listener (an emptyDir with medium Memory, never a host path), which keeps http.addr, proxy.listen and proxy.peer_listen open while electd restarts: connections then wait instead of being refused (http.addr needs a fixed port); empty: electd binds them itself"`
}

// ZooKeeper is the "zookeeper" section.
type ZooKeeper struct {
	Servers          []string      `mapstructure:"servers" key:"required" example:"127.0.0.1:2181" engine:"Servers" help:"host:port list, comma-separated in env and flags; each host a DNS name or an IP address; names that do not resolve yet are retried, never fatal"`
	Chroot           string        `mapstructure:"chroot" default:"" help:"path prefix for everything electd reads and writes, e.g. /prod"`
	SessionTimeout   time.Duration `mapstructure:"session_timeout" engine:"SessionTimeout" help:"requested session timeout, 1s to 10m; the negotiated one counts (electd_zk_session_timeout_seconds)"`
	Auth             string        `mapstructure:"auth" default:"" key:"secret,file=auth_file" engine:"Auth" help:"digest credentials user:password; nodes then get ACLs that only these may change"`
	AuthFile         string        `mapstructure:"auth_file" default:"" help:"file holding the user:password of zookeeper.auth (a mounted Kubernetes Secret; surrounding whitespace is trimmed)"`
	AuthPrevious     string        `mapstructure:"auth_previous" default:"" key:"secret,file=auth_previous_file" engine:"AuthPrevious" help:"while rotating zookeeper.auth: the credential it replaces, also accepted until every participant has the new one; leave it unset otherwise (docs/operations.md)"`
	AuthPreviousFile string        `mapstructure:"auth_previous_file" default:"" help:"file holding zookeeper.auth_previous (a mounted Kubernetes Secret; surrounding whitespace is trimmed)"`
	FixACL           bool          `mapstructure:"fix_acl" default:"false" engine:"FixACL" help:"with zookeeper.auth set, when the election path's ACL lets others create or delete there, replace it with electd's ACL (needs ADMIN permission) instead of refusing to stand"`
	TLS              bool          `mapstructure:"tls" default:"false" help:"connect to ZooKeeper over TLS (its secureClientPort)"`
	TLSCAFile        string        `mapstructure:"tls_ca_file" default:"" help:"PEM CA certificates that sign the servers' certificates; empty: the system's (needs zookeeper.tls)"`
	TLSCertFile      string        `mapstructure:"tls_cert_file" default:"" help:"PEM client certificate, with zookeeper.tls_key_file; reloaded when it changes (needs zookeeper.tls)"`
	TLSKeyFile       string        `mapstructure:"tls_key_file" default:"" help:"PEM private key of zookeeper.tls_cert_file (needs zookeeper.tls)"`
	TLSServerName    string        `mapstructure:"tls_server_name" default:"" help:"name the servers' certificates must carry; empty: each server's host name (needs zookeeper.tls)"`
	SessionFile      string        `mapstructure:"session_file" default:"" help:"file (mode 0600) keeping the session's id and password, so that a restarted electd resumes its session, node and leadership; put it where only a restart of this pod finds it (an emptyDir with medium Memory); empty: off"`
}

// Election is the "election" section.
type Election struct {
	Path          string        `mapstructure:"path" key:"required" example:"/services/example" engine:"Path" help:"absolute znode path of the election; with zookeeper.chroot at most 1024 bytes"`
	Mode          string        `mapstructure:"mode" default:"latch" engine:"Mode" help:"latch (lowest node leads until it lets go), selector (rotates each term) or race"`
	Term          time.Duration `mapstructure:"term" default:"0s" engine:"Term" help:"selector mode only: length of one leadership term, 250ms to 168h; 0s holds until released"`
	OnSuspend     string        `mapstructure:"on_suspend" default:"hold" engine:"OnSuspend" help:"hold (lead through a disconnect while the lease lasts) or step-down (give up at once)"`
	Handoff       string        `mapstructure:"handoff" default:"newest" engine:"Handoff" help:"who takes over when the leader shuts down or withdraws: newest (the participant that joined last, so a rollout moves leadership once) or next (the next in the queue, as Curator does)"`
	ClaimDelay    time.Duration `mapstructure:"claim_delay" default:"0s" engine:"ClaimDelay" help:"a new leader waits this long, at most 10m, before its first 200 on /healthz/leader"`
	FencingOffset int64         `mapstructure:"fencing_offset" default:"0" engine:"FencingOffset" help:"added to every fencing token, 0 to 2^62, to keep tokens growing across an ensemble rebuild"`
	// Candidate is not mapped by an engine tag: the engine starts as an
	// observer (election.Config.Observer, set by prepare) when it is false
	// or when app.health_url is set (nobody stands before a first passed
	// check).
	Candidate bool `mapstructure:"candidate" default:"true" help:"stand for leadership; false joins as an observer (no node, never leads, /leader stays current); POST /candidacy changes it at run time"`
}

// HTTP is the "http" section.
type HTTP struct {
	Addr           string `mapstructure:"addr" default:":4040" help:"listen address host:port of the HTTP API and /metrics (not 8080: the app shares the pod's network); port 0 takes any free port, logged at start"`
	AdminToken     string `mapstructure:"admin_token" default:"" key:"secret,file=admin_token_file" help:"bearer token for POST /leader/release; empty disables mutating endpoints"`
	AdminTokenFile string `mapstructure:"admin_token_file" default:"" help:"file holding http.admin_token (a mounted Kubernetes Secret; surrounding whitespace is trimmed)"`
	TLSCertFile    string `mapstructure:"tls_cert_file" default:"" help:"PEM certificate to serve HTTPS with, with http.tls_key_file; reloaded when it changes"`
	TLSKeyFile     string `mapstructure:"tls_key_file" default:"" help:"PEM private key of http.tls_cert_file"`
	MaxConnections int    `mapstructure:"max_connections" default:"256" help:"most HTTP connections open at once, 1 to 16384, and at least http.max_streams + http.max_waiters + 16 so that the probes always get in; unset, 256 or that sum when larger"`
	MaxStreams     int    `mapstructure:"max_streams" help:"most /events clients at once, 1 to 4096; more get 503; unset, {default} or less to fit a smaller http.max_connections"`
	MaxWaiters     int    `mapstructure:"max_waiters" help:"most /healthz/leader?wait= long polls at once, 1 to 4096; more get 503; unset, {default} or less to fit a smaller http.max_connections"`
}

// Kubernetes is the "kubernetes" section: the leader label and Lease mirror
// (internal/kube), off unless leader_label or lease_name is set, and the
// participant gate, off unless participant_gate is true.
type Kubernetes struct {
	LeaderLabel     string        `mapstructure:"leader_label" kube:"LeaderLabel" default:"" help:"label key set to \"true\" on the leader's own pod, e.g. electd.io/leader; empty: no label"`
	LeaseName       string        `mapstructure:"lease_name" kube:"LeaseName" default:"" help:"coordination.k8s.io/v1 Lease that mirrors the leader; empty: none"`
	PodName         string        `mapstructure:"pod_name" kube:"PodName" computed:"$POD_NAME" example:"web-1-7d4b9-x2x" help:"this pod's name (the downward API's metadata.name)"`
	Namespace       string        `mapstructure:"namespace" kube:"Namespace" computed:"$POD_NAMESPACE, else the service account's namespace file" example:"prod" help:"this pod's namespace"`
	APIServer       string        `mapstructure:"api_server" kube:"Server" computed:"https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT" example:"https://10.96.0.1:443" help:"base URL of the Kubernetes API server"`
	TokenFile       string        `mapstructure:"token_file" kube:"TokenFile" default:"/var/run/secrets/kubernetes.io/serviceaccount/token" help:"service account token, read again for every call (the kubelet rotates it)"`
	CAFile          string        `mapstructure:"ca_file" kube:"CAFile" default:"/var/run/secrets/kubernetes.io/serviceaccount/ca.crt" help:"CA bundle that verifies the API server"`
	RecheckInterval time.Duration `mapstructure:"recheck_interval" kube:"RecheckInterval" default:"10s" help:"how often the leader re-checks the label and renews the Lease, at least 1s"`
	ParticipantGate bool          `mapstructure:"participant_gate" kube:"ParticipantGate" default:"false" help:"keep the pod condition electd.io/participant for a readinessGates entry: True on the own pod once joined, False from the leader on a pod whose participant left the election (needs get and patch on pods/status; id must be the pod name)"`
}

// Log is the "log" section.
type Log struct {
	Level  string `mapstructure:"level" default:"info" help:"slog level: debug, info, warn or error"`
	Format string `mapstructure:"format" default:"json" help:"json or text"`
}

// App is the "app" section: the health of the application next to electd
// (docs/design/handover.md, "Candidacy"). The defaults are a
// Kubernetes probe's (periodSeconds, timeoutSeconds, failureThreshold,
// successThreshold).
type App struct {
	HealthURL        string        `mapstructure:"health_url" default:"" help:"http(s) URL electd GETs to check the application; 200-399 passes; while it fails this participant does not stand (at most 2048 bytes; empty disables)"`
	HealthInterval   time.Duration `mapstructure:"health_interval" default:"10s" help:"time between health checks, 100ms to 1h; unset, 10s or app.health_timeout when that is longer"`
	HealthTimeout    time.Duration `mapstructure:"health_timeout" default:"1s" help:"how long one health check may take, 10ms up to app.health_interval; unset, 1s or app.health_interval when that is shorter"`
	FailureThreshold int           `mapstructure:"failure_threshold" default:"3" help:"consecutive failed checks, 1 to 100, that make a healthy application unhealthy"`
	SuccessThreshold int           `mapstructure:"success_threshold" default:"1" help:"consecutive passed checks, 1 to 100, that make an unhealthy (or unchecked) application healthy"`
}

// Exec is the "exec" section: `electd run -- CMD` only.
type Exec struct {
	KillTimeout time.Duration `mapstructure:"kill_timeout" default:"5s" help:"electd run: SIGKILL the command's process group this long after SIGTERM, 0s to 10m and shorter than shutdown_timeout; unset, 5s, or half of what shutdown_timeout leaves after shutdown_grace when 5s is not shorter"`
	OnExit      string        `mapstructure:"on_exit" default:"release" help:"electd run: when the command exits while leading: release (re-queue at the back), restart (run it again) or exit (electd shuts down)"`
}

// Proxy is the "proxy" section: the forwarding proxy (docs/design/proxy.md,
// "Forwarding"), off unless listen is set. Zero values of the timeouts and
// caps are never set here: each has its default.
type Proxy struct {
	Listen              string        `mapstructure:"listen" proxy:"Listen" default:"" help:"host:port on which the forwarding proxy takes the application's traffic, e.g. :4041, and sends it to the leader's application; empty: no proxy"`
	Mode                string        `mapstructure:"mode" proxy:"Mode" default:"http" help:"http (HTTP/1.1 and HTTP/2 with prior knowledge: gRPC, WebSocket upgrades included) or tcp (whole connections, for protocols that are not HTTP)"`
	App                 string        `mapstructure:"app" proxy:"App" default:"" help:"host:port of the application next to electd, e.g. 127.0.0.1:8080; required with proxy.listen"`
	AppProtocol         string        `mapstructure:"app_protocol" proxy:"AppProtocol" default:"http1" help:"http: how requests reach the application, whatever the client spoke: http1 (HTTP/1.1; HTTP/2 clients are translated) or h2c (HTTP/2 with prior knowledge for all but upgrades; gRPC needs it, and an application that stops then says with its GOAWAY which requests it never took, and they go to the new leader)"`
	PeerListen          string        `mapstructure:"peer_listen" proxy:"PeerListen" computed:"the host of proxy.listen with the next port (port 0 stays 0)" help:"host:port at which the other participants' proxies forward to this one, e.g. :4042, never proxy.listen's port (clients' port takes no forward)"`
	Advertise           string        `mapstructure:"advertise" engine:"Proxy" computed:"$POD_IP with the port of proxy.peer_listen, else that address when it names a host" help:"host:port at which the other participants reach this proxy's proxy.peer_listen, e.g. 10.0.0.7:4042, published beside advertise (at most 4096 bytes)"`
	PeerKey             string        `mapstructure:"peer_key" proxy:"PeerKey" default:"" key:"secret,file=peer_key_file" help:"secret that every participant of the election shares, at least 32 bytes (make one with: openssl rand -base64 32): the proxies derive their mutual TLS key from it and take forwards only from its holders; required with proxy.listen"`
	PeerKeyFile         string        `mapstructure:"peer_key_file" default:"" help:"file holding proxy.peer_key (a mounted Kubernetes Secret; surrounding whitespace is trimmed)"`
	HoldTime            time.Duration `mapstructure:"hold_time" proxy:"HoldTime" help:"how long a request waits for a leader to take it, 10ms to 5m, before it gets 503 with Retry-After (tcp: is closed); unset, 1.5 times zookeeper.session_timeout plus 2s ({default} by default: it covers a leader that crashed, until the next one leads), or twice proxy.drain_timeout when that is not shorter"`
	DrainTimeout        time.Duration `mapstructure:"drain_timeout" proxy:"DrainTimeout" help:"how long a leader that hands over waits for the requests its application has, 1ms to 1m and shorter than proxy.hold_time: at least the longest request that must survive a graceful hand-over; unset, {default} or half of proxy.hold_time when that is shorter"`
	MaxHeld             int           `mapstructure:"max_held" proxy:"MaxHeld" help:"most requests and connections waiting for a leader at once, 1 to proxy.max_connections; more get 503 at once; unset, {default} or proxy.max_connections when that is lower"`
	MaxConnections      int           `mapstructure:"max_connections" proxy:"MaxConnections" help:"most open client connections, 1 to 1048576; a newcomer past it evicts the connection idle longest, else the one whose buffered body arrives slowest (http), else it is closed; unset, {default} or proxy.max_held when that is higher"`
	MaxPeerConnections  int           `mapstructure:"max_peer_connections" proxy:"MaxPeerConnections" help:"most open connections on proxy.peer_listen, 1 to 1048576, apart from the clients' so that neither can take the other's"`
	PeerStreams         int           `mapstructure:"peer_streams" proxy:"PeerStreams" help:"http: forwards one peer's connection carries at once (HTTP/2 streams), 1 to 65536: the share of this proxy each other proxy is sure of"`
	PeerTimeout         time.Duration `mapstructure:"peer_timeout" proxy:"PeerTimeout" help:"http: how long a peer's proxy that stops answering is believed, 10ms to 1m: pinged after half of it without a frame, given up after the other half"`
	DialTimeout         time.Duration `mapstructure:"dial_timeout" proxy:"DialTimeout" help:"bounds connecting to the application or to a peer's proxy, 1ms to 1m; a dial that fails is tried again within the hold time"`
	ClientHeaderTimeout time.Duration `mapstructure:"client_header_timeout" proxy:"ClientHeaderTimeout" help:"bounds receiving a request's headers in total (tcp: a peer's preamble), 1ms to 10m"`
	ClientBodyTimeout   time.Duration `mapstructure:"client_body_timeout" proxy:"ClientBodyTimeout" help:"http: bounds receiving a body the proxy buffers (proxy.buffer_size) in total, 1ms to 10m; 408 past it"`
	ResponseTimeout     time.Duration `mapstructure:"response_timeout" proxy:"ResponseTimeout" help:"bounds the wait for the application's response headers, 1ms to 24h; 504 past it"`
	IdleTimeout         time.Duration `mapstructure:"idle_timeout" proxy:"IdleTimeout" help:"closes a kept-alive connection idle between requests, and an upgraded or spliced one idle both ways, 1s to 24h"`
	BodyTimeout         time.Duration `mapstructure:"body_timeout" proxy:"BodyTimeout" help:"the longest pause within a streamed request or response body, and of a write to a spliced connection, 1ms to 24h; 504 or a close past it"`
	MaxHeaderBytes      int           `mapstructure:"max_header_bytes" proxy:"MaxHeaderBytes" help:"bounds a request's headers, 1024 to 1048576 bytes; 431 past it"`
	BufferSize          int           `mapstructure:"buffer_size" proxy:"BufferSize" help:"http: a body of a declared length up to this many bytes, 1024 to 67108864, is received whole before it goes anywhere (a slow client holds nothing at the leader; the request can be sent again whole); longer ones and streams are streamed"`
	BufferTotal         int64         `mapstructure:"buffer_total" proxy:"BufferTotal" help:"http: most bytes of bodies buffered at once, proxy.buffer_size to 17179869184; a request waits for room within the hold time, then gets 503"`
	ResendUnreadBody    bool          `mapstructure:"resend_unread_body" proxy:"ResendUnreadBody" default:"false" help:"http: send a request to the new leader when the application closed its connection before it asked for the body (100 Continue); unsafe for an application that may act on a request before it reads its body, which would then run twice"`
	TrustedProxies      []string      `mapstructure:"trusted_proxies" proxy:"TrustedProxies" default:"" help:"http: CIDRs or addresses of front proxies (load balancers) whose X-Forwarded-For/-Proto/-Host, Forwarded and X-Real-IP are kept (the client's address appended to X-Forwarded-For and Forwarded); from anyone else they are replaced; other spellings (X_Forwarded_For) and trailers of these names are dropped from anyone; at most 256"`
	AppTimeoutStepDown  int           `mapstructure:"app_timeout_stepdown" proxy:"AppTimeoutStepDown" help:"http: failed checks in a row, 1 to 1000, that make the leader step down as for an application that refuses connections; an answer timeout starts the checks (app.health_url, else HEAD / on a new connection, each within proxy.response_timeout or 5s when shorter) and never steps down alone"`
	AppMaxInFlight      int           `mapstructure:"app_max_in_flight" proxy:"AppMaxInFlight" default:"0" help:"http: most requests the application has at once, 1 to 1048576, as HAProxy's server maxconn: more wait in the hold, within the hold time, rather than in an accept queue the application may overflow (Python's http.server keeps 5); 0: no limit"`
}
