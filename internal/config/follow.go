package config

import (
	"github.com/electd/electd/internal/apphealth"
	"github.com/electd/electd/internal/execmode"
	"github.com/electd/electd/internal/follow"
)

// follow maps the app.*, exec.* and election keys onto what makes
// leadership follow the application (internal/follow). environ is
// electd's environment: electd run's command gets it without electd's
// secrets. The address of the HTTP API, which the command gets too, is
// known once the daemon listens.
func (l *Loaded) follow(environ []string) follow.Config {
	a := l.App
	fc := follow.Config{
		Operator: l.Election.Candidate, Standing: !l.Prepared.Election.Observer,
		Health: apphealth.Config{URL: a.HealthURL, Interval: a.HealthInterval, Timeout: a.HealthTimeout,
			FailureThreshold: a.FailureThreshold, SuccessThreshold: a.SuccessThreshold},
	}
	if l.Run {
		fc.Command = l.Command
		fc.Exec = execmode.Config{KillTimeout: l.Exec.KillTimeout, OnExit: execmode.OnExit(l.Exec.OnExit),
			Env: WithoutSecrets(environ), ElectionPath: l.Election.Path}
	}
	return fc
}
