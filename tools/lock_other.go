//go:build !unix

package tools

import "errors"

func lock(string) (func(), error) {
	return nil, errors.New("tools: building test tools needs a unix system (flock)")
}
