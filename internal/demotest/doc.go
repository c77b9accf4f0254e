// Package demotest runs scripts/demo.sh non-interactively, so that the
// newcomer's first command, `make demo`, is tested like everything else.
// It starts a real ZooKeeper from Debian's packages and three electd
// processes; see the README's "Development" section.
package demotest
