// Command gen writes config.example.yaml and docs/configuration.md from
// internal/config's table:
//
//	go generate ./internal/config
//
// The reference's prose is configuration.md.tmpl; its tables come from the
// keys' tags, as config.example.yaml does.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/electd/electd/internal/config"
)

func main() {
	out := flag.String("o", "config.example.yaml", "file to write the example configuration to")
	doc := flag.String("doc", "", "file to write the configuration reference (Markdown) to; empty: none")
	flag.Parse()
	if err := write(*out, *doc); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func write(out, doc string) error {
	if err := os.WriteFile(out, config.Example(), 0o644); err != nil {
		return err
	}
	if doc == "" {
		return nil
	}
	b, err := reference()
	if err != nil {
		return err
	}
	return os.WriteFile(doc, b, 0o644)
}
