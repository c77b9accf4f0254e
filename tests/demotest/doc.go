// Package demotest runs the demo (tests/harness/demo, behind `make demo`) non-interactively,
// so that the newcomer's first command is tested like everything else: a real ZooKeeper
// from Debian's packages (tests/harness/zktest) and three electd processes, the binary this
// test run built once (tests/harness/electdtest). It checks the story the demo tells, not how
// fast it goes, and that README.md's transcript of `make demo-ci` is what the demo
// prints (tests/harness/doctest's comparison; -update writes it); see docs/development.md.
package demotest
