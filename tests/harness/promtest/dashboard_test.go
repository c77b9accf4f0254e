package promtest

import "testing"

// TestExpandInterpolatesLikeGrafana checks the interpolation the parse
// check depends on.
func TestExpandInterpolatesLikeGrafana(t *testing.T) {
	vars := map[string]string{"election": ".*", "datasource": "prometheus"}
	for in, want := range map[string]string{
		`rate(x{election=~"$election"}[$__rate_interval])`: `rate(x{election=~".*"}[1m])`,
		`x{election=~"${election}"}`:                       `x{election=~".*"}`,
		`x{election=~"${election:regex}"}`:                 `x{election=~".*"}`,
		`label_replace(x, "m", "$1", "pod", "(.+)")`:       `label_replace(x, "m", "$1", "pod", "(.+)")`,
		`x{a="$unknown"}`:                                  `x{a="$unknown"}`,
	} {
		if got := Expand(in, vars, map[string]string{"__rate_interval": "1m"}); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}
