// Command gen writes config.example.yaml from internal/config's table:
//
//	go generate ./internal/config
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/electd/electd/internal/config"
)

func main() {
	out := flag.String("o", "config.example.yaml", "file to write")
	flag.Parse()
	if err := os.WriteFile(*out, config.Example(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
