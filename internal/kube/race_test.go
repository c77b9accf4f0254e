//go:build race

package kube_test

func init() { raceEnabled = true }
