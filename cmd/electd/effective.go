package main

import (
	"io"

	"github.com/electd/electd/internal/config"
)

// printEffective is --validate's output: the effective configuration as
// YAML in the table's order, secrets masked. With the secrets filled back
// in, it is a valid configuration file.
func printEffective(w io.Writer, c *Config) {
	config.WriteEffective(w, &c.Config)
}
