package main

import (
	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/kube"
)

// Config is electd's loaded configuration: the keys' values (internal/config,
// docs/DESIGN.md "Configuration") and what was built and checked from them
// once, at load.
type Config struct {
	config.Config
	prepared config.Prepared
	exec     *execSpec // electd run's command; nil otherwise (run.go)
}

// path is the election path with the chroot applied.
func (c *Config) path() string { return c.prepared.Election.Path }

// sessionConfig and electionConfig are the engine's configuration, validated
// by the engine at load; the caller adds logger and recorder.
func (c *Config) sessionConfig() election.SessionConfig { return c.prepared.Session }
func (c *Config) electionConfig() election.Config       { return c.prepared.Election }

// httpCert is the certificate of http.tls_cert_file, reloaded when its files
// change; nil without one (plain HTTP).
func (c *Config) httpCert() *config.KeyPair { return c.prepared.HTTPCert }

// kubeConfig is the leader label and Lease mirror's configuration.
func (c *Config) kubeConfig() kube.Config { return c.prepared.Kube }
