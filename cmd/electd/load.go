package main

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/electd/electd/internal/kube"
)

// load builds the configuration from the optional file named by --config,
// the ELECTD_* environment and the flags already parsed into fs, in that
// order of precedence, then validates it. Nothing connects.
func load(fs *pflag.FlagSet, file string) (*Config, error) {
	v := viper.New()
	for _, k := range keys {
		if k.def != "" {
			v.SetDefault(k.name, k.def)
		}
		if err := v.BindEnv(k.name, envName(k.name)); err != nil {
			return nil, errorf(k.name, "%v", err)
		}
		if err := v.BindPFlag(k.name, fs.Lookup(k.name)); err != nil {
			return nil, errorf(k.name, "%v", err)
		}
	}
	if file != "" {
		if err := readFile(v, file); err != nil {
			return nil, err
		}
	}
	d := decoder{v: v}
	c := &Config{}
	c.ID = d.str("id")
	c.Advertise = d.str("advertise")
	c.ZooKeeper.Servers = d.list("zookeeper.servers")
	c.ZooKeeper.Chroot = d.str("zookeeper.chroot")
	c.ZooKeeper.SessionTimeout = d.duration("zookeeper.session_timeout")
	c.ZooKeeper.Auth = d.str("zookeeper.auth")
	c.ZooKeeper.AuthFile = d.str("zookeeper.auth_file")
	c.Election.Path = d.str("election.path")
	c.Election.Mode = d.str("election.mode")
	c.Election.Term = d.duration("election.term")
	c.Election.OnSuspend = d.str("election.on_suspend")
	c.Election.ClaimDelay = d.duration("election.claim_delay")
	c.Election.FencingOffset = d.int("election.fencing_offset")
	c.HTTP.Addr = d.str("http.addr")
	c.HTTP.AdminToken = d.str("http.admin_token")
	c.Log.Level = d.str("log.level")
	c.Log.Format = d.str("log.format")
	c.ShutdownGrace = d.duration("shutdown_grace")
	c.ShutdownTimeout = d.duration("shutdown_timeout")
	c.Kubernetes.LeaderLabel = d.str("kubernetes.leader_label")
	c.Kubernetes.LeaseName = d.str("kubernetes.lease_name")
	c.Kubernetes.PodName = d.str("kubernetes.pod_name")
	c.Kubernetes.Namespace = d.str("kubernetes.namespace")
	c.Kubernetes.TokenFile = d.str("kubernetes.token_file")
	c.Kubernetes.CAFile = d.str("kubernetes.ca_file")
	c.Kubernetes.RecheckInterval = d.duration("kubernetes.recheck_interval")
	if d.err != nil {
		return nil, d.err
	}
	if c.ID == "" {
		c.ID = defaultID()
	}
	if c.Kubernetes.PodName == "" {
		c.Kubernetes.PodName = os.Getenv("POD_NAME")
	}
	// The namespace file is read only when something uses the namespace.
	if c.Kubernetes.Namespace == "" && c.kubeConfig().Enabled() {
		c.Kubernetes.Namespace = kube.DefaultNamespace(os.Getenv, kube.DefaultNamespaceFile)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// defaultID is $POD_NAME, else the host name, else "".
func defaultID() string {
	if p := os.Getenv("POD_NAME"); p != "" {
		return p
	}
	h, _ := os.Hostname()
	return h
}

// readFile parses the YAML file, rejects keys electd does not know (viper
// would silently ignore them) and hands it to v.
func readFile(v *viper.Viper, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return errorf("config", "cannot read: %v", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return errorf("config", "%s does not parse as YAML: %v", file, err)
	}
	if err := checkKeys(doc, ""); err != nil {
		return err
	}
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(b)); err != nil {
		return errorf("config", "%s does not parse as YAML: %v", file, err)
	}
	return nil
}

// checkKeys walks the file's mappings: every leaf must be a known key and
// every section a mapping.
func checkKeys(m map[string]any, prefix string) error {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		full := prefix + strings.ToLower(name)
		if isKey(full) {
			continue
		}
		if !isSection(full) {
			return errorf(full, "unknown key in the configuration file")
		}
		sub, ok := m[name].(map[string]any)
		if !ok && m[name] != nil {
			return errorf(full, "must be a mapping of keys")
		}
		if err := checkKeys(sub, full+"."); err != nil {
			return err
		}
	}
	return nil
}

func isKey(name string) bool {
	for _, k := range keys {
		if k.name == name {
			return true
		}
	}
	return false
}

func isSection(name string) bool {
	for _, k := range keys {
		if strings.HasPrefix(k.name, name+".") {
			return true
		}
	}
	return false
}

// unknownEnv lists ELECTD_* variables that name no key. They only warn:
// Kubernetes injects ELECTD_PORT and friends for a Service named electd.
func unknownEnv(environ []string) []string {
	known := map[string]bool{}
	for _, k := range keys {
		known[envName(k.name)] = true
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ELECTD_") && !known[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// decoder reads typed values from viper; the first bad value sticks in err.
// Viper hands back strings from flags and the environment, and YAML types
// from the file. An empty string means "not set": the default applies.
type decoder struct {
	v   *viper.Viper
	err error
}

func (d *decoder) raw(k string) any {
	r := d.v.Get(k)
	if s, ok := r.(string); ok && strings.TrimSpace(s) == "" {
		for _, kk := range keys {
			if kk.name == k {
				return kk.def
			}
		}
	}
	return r
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) str(k string) string {
	s, err := scalar(k, d.raw(k))
	d.fail(err)
	return s
}

func scalar(k string, r any) (string, error) {
	switch r := r.(type) {
	case nil:
		return "", nil
	case string:
		return r, nil
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(r), nil
	}
	return "", errorf(k, "must be a single value, not a list or mapping")
}

// list accepts a YAML list or a comma-separated string.
func (d *decoder) list(k string) []string {
	var parts []string
	switch r := d.raw(k).(type) {
	case []any:
		for _, e := range r {
			s, err := scalar(k, e)
			if err != nil {
				d.fail(err)
				return nil
			}
			parts = append(parts, strings.Split(s, ",")...)
		}
	default:
		s, err := scalar(k, r)
		if err != nil {
			d.fail(err)
			return nil
		}
		parts = strings.Split(s, ",")
	}
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// duration requires a unit: "10" is an error, not 10ns. A bare 0 is zero
// in any unit, so it is accepted.
func (d *decoder) duration(k string) time.Duration {
	r := d.raw(k)
	switch r.(type) {
	case string, nil:
	default:
		if s, _ := scalar(k, r); s == "0" {
			return 0
		}
		d.fail(errorf(k, "%v has no unit; quote a duration such as \"10s\" or \"500ms\"", r))
		return 0
	}
	s, _ := r.(string)
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		d.fail(errorf(k, "%q has no unit; write e.g. %ss or %sms", s, s, s))
		return 0
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.fail(errorf(k, "%q is not a duration such as 10s, 500ms or 1m30s", s))
		return 0
	}
	if v < 0 {
		d.fail(errorf(k, "%q must not be negative", s))
		return 0
	}
	return v
}

func (d *decoder) int(k string) int64 {
	s, err := scalar(k, d.raw(k))
	if err != nil {
		d.fail(err)
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		d.fail(errorf(k, "%q is not a whole number", s))
		return 0
	}
	if n < 0 {
		d.fail(errorf(k, "%d must not be negative", n))
		return 0
	}
	return n
}
