package config

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/electd/electd/internal/fielderr"
)

// A package's Validate may return one field error or every one joined,
// nested or not, from any package a key fills: each is named by its key,
// a secret by the file it was read from, anything else shown as it is.
func TestFieldErrorsNameEveryKey(t *testing.T) {
	c := &Config{}
	c.ZooKeeper.AuthFile = "/run/secrets/zk"
	plain := errors.New("no field")
	for _, tc := range []struct {
		name string
		err  error
		want []string // the key of each, or the message of an error that names none
	}{
		{"none", nil, nil},
		{"one", fielderr.Errorf("election", "ID", "must not be empty"), []string{"id"}},
		{"joined, from every package", errors.Join(
			fielderr.Errorf("election", "Mode", "bad"),
			fielderr.Errorf("proxy", "HoldTime", "bad"),
			fielderr.Errorf("kube", "Namespace", "bad"),
		), []string{"election.mode", "proxy.hold_time", "kubernetes.namespace"}},
		{"nested and wrapped", errors.Join(
			fmt.Errorf("session: %w", fielderr.Errorf("election", "SessionTimeout", "bad")),
			errors.Join(fielderr.Errorf("election", "Auth", "bad"), plain),
		), []string{"zookeeper.session_timeout", "zookeeper.auth_file", "no field"}},
		{"a field no key sets", fielderr.Errorf("election", "RenewInterval", "bad"), []string{"election: RenewInterval: bad"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range c.fieldErrors(tc.err) {
				var ke *KeyError
				if errors.As(err, &ke) {
					got = append(got, ke.Key)
				} else {
					got = append(got, err.Error())
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("keys %q, want %q", got, tc.want)
			}
		})
	}
}
