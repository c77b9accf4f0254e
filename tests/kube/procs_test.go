package kube

import (
	"testing"

	"github.com/electd/electd/tests/harness/electdtest"
)

// startElectd runs electd as pod id: configured by env on top of its id,
// HTTP address and admin token (electdtest.AdminToken).
func startElectd(t *testing.T, id string, env []string) *electdtest.Member {
	t.Helper()
	addr := electdtest.MustFreeAddr(t)
	env = append([]string{"ELECTD_ID=" + id, "ELECTD_HTTP_ADDR=" + addr, "ELECTD_ADVERTISE=" + addr,
		"ELECTD_HTTP_ADMIN_TOKEN=" + electdtest.AdminToken, "ELECTD_LOG_FORMAT=text"}, env...)
	return electdtest.StartT(t, electdtest.Spec{Name: id, Addr: addr, Env: env})
}
