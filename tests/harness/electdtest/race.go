//go:build race

package electdtest

func init() { raceEnabled = true }
