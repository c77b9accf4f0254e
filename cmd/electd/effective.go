package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// values are the effective values by key, as --validate shows them:
// secrets masked, durations with their unit, lists comma-separated.
func (c *Config) values() map[string]string {
	quoteAll := func(ss []string) string {
		q := make([]string, len(ss))
		for i, s := range ss {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	return map[string]string{
		"id":                          strconv.Quote(c.ID),
		"advertise":                   strconv.Quote(c.Advertise),
		"zookeeper.servers":           quoteAll(c.ZooKeeper.Servers),
		"zookeeper.chroot":            strconv.Quote(c.ZooKeeper.Chroot),
		"zookeeper.session_timeout":   c.ZooKeeper.SessionTimeout.String(),
		"zookeeper.auth":              strconv.Quote(mask(c.ZooKeeper.Auth)),
		"zookeeper.auth_file":         strconv.Quote(c.ZooKeeper.AuthFile),
		"election.path":               strconv.Quote(c.Election.Path),
		"election.mode":               c.Election.Mode,
		"election.term":               c.Election.Term.String(),
		"election.on_suspend":         c.Election.OnSuspend,
		"election.claim_delay":        c.Election.ClaimDelay.String(),
		"election.fencing_offset":     strconv.FormatInt(c.Election.FencingOffset, 10),
		"http.addr":                   strconv.Quote(c.HTTP.Addr),
		"http.admin_token":            strconv.Quote(mask(c.HTTP.AdminToken)),
		"log.level":                   c.Log.Level,
		"log.format":                  c.Log.Format,
		"shutdown_grace":              c.ShutdownGrace.String(),
		"shutdown_timeout":            c.ShutdownTimeout.String(),
		"kubernetes.leader_label":     strconv.Quote(c.Kubernetes.LeaderLabel),
		"kubernetes.lease_name":       strconv.Quote(c.Kubernetes.LeaseName),
		"kubernetes.pod_name":         strconv.Quote(c.Kubernetes.PodName),
		"kubernetes.namespace":        strconv.Quote(c.Kubernetes.Namespace),
		"kubernetes.token_file":       strconv.Quote(c.Kubernetes.TokenFile),
		"kubernetes.ca_file":          strconv.Quote(c.Kubernetes.CAFile),
		"kubernetes.recheck_interval": c.Kubernetes.RecheckInterval.String(),
	}
}

// mask hides a secret, but still shows whether it is set.
func mask(s string) string {
	if s == "" {
		return ""
	}
	return "***"
}

// printEffective writes the effective configuration as YAML in the table's
// order. With the secrets filled back in, it is a valid configuration file.
func printEffective(w io.Writer, c *Config) {
	vals := c.values()
	fmt.Fprintln(w, "# electd effective configuration (secrets masked)")
	if c.ZooKeeper.Chroot != "" {
		fmt.Fprintf(w, "# election path with the chroot: %s\n", c.path())
	}
	section := ""
	for _, k := range keys {
		sec, leaf, nested := strings.Cut(k.name, ".")
		if !nested {
			sec, leaf = "", k.name
		}
		if sec != section && sec != "" {
			fmt.Fprintf(w, "%s:\n", sec)
		}
		section = sec
		indent := ""
		if sec != "" {
			indent = "  "
		}
		fmt.Fprintf(w, "%s%s: %s\n", indent, leaf, vals[k.name])
	}
}
