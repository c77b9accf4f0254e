package main

import (
	"os"
	"regexp"
	"testing"
)

// `go install github.com/electd/electd/cmd/electd@VERSION` refuses a module
// whose go.mod has a replace (or exclude) directive; the patched go-zookeeper
// lives in third_party/ as a package of this module instead (see its README).
func TestGoModInstallable(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^\s*(replace|exclude)\b.*$`).Find(b); m != nil {
		t.Fatalf("go.mod has %q: go install <module>/cmd/electd@<version> would refuse it", m)
	}
}
