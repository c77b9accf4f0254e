package config

import (
	"regexp"
	"strings"

	"github.com/agnivade/levenshtein"
)

// A misspelt key is named with the key it most likely meant ("did you
// mean"), whatever its source: a file's key, a flag, an ELECTD_*
// variable. The nearest key is the one fewest edits away (Levenshtein),
// when that is few enough to be a slip rather than another word: at most
// maxEdits, or a third of the name's length for long names. A key of
// the wrong section (session_timeout at the top) is found by its last
// segment.
const maxEdits = 2

// nearest returns the key, or section, that name most likely meant, or ""
// when none is near; also one of others (the flags that are no keys).
// name is in the keys' spelling (lower case, dotted).
func nearest(name string, others ...string) string {
	name = strings.ToLower(name)
	// The right leaf in the wrong section, or with none.
	leaf := name[strings.LastIndexByte(name, '.')+1:]
	var found []string
	for _, k := range table {
		if k.Leaf() == leaf && k.Name != name {
			found = append(found, k.Name)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	candidates := append(sections(), others...)
	for _, k := range table {
		candidates = append(candidates, k.Name)
	}
	return closest(name, candidates)
}

// Closest is the candidate fewest edits from name, if few enough to be a
// slip (as for keys), else "": main suggests its commands with it.
func Closest(name string, candidates ...string) string { return closest(name, candidates) }

// closest is the candidate fewest edits from name, if few enough, else "".
func closest(name string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := levenshtein.ComputeDistance(name, c)
		if d > 0 && d <= max(maxEdits, len(name)/3) && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// sections are the sections' names, in the table's order.
func sections() []string {
	var out []string
	for _, k := range table {
		if s := k.Section(); s != "" && (len(out) == 0 || out[len(out)-1] != s) {
			out = append(out, s)
		}
	}
	return out
}

// didYouMean is "; did you mean X?" for a suggestion X with prefix
// before it (-- for a flag), or "" for none.
func didYouMean(suggestion, prefix string) string {
	if suggestion == "" {
		return ""
	}
	return "; did you mean " + prefix + suggestion + "?"
}

// nearestEnv is the variable of the key nearest to an unknown ELECTD_*
// variable, or "" when none is near or the name is one that Kubernetes
// injects for a Service named electd (its service links: ELECTD_PORT,
// ELECTD_SERVICE_HOST, ELECTD_PORT_4040_TCP_ADDR, ...), which are never a
// slip.
func nearestEnv(name string) string {
	rest, ok := strings.CutPrefix(name, "ELECTD_")
	if !ok || serviceLink.MatchString(rest) {
		return ""
	}
	// A variable names a key with "_" for "." and for "_": compare the
	// variables, not the keys.
	rests := make([]string, len(table))
	for i, k := range table {
		rests[i] = strings.TrimPrefix(k.Env, "ELECTD_")
	}
	if n := closest(rest, rests); n != "" {
		return "ELECTD_" + n
	}
	return ""
}

// serviceLink matches what follows ELECTD_ in the variables of
// Kubernetes' service links (enableServiceLinks) for a Service named
// electd.
var serviceLink = regexp.MustCompile(`^(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$`)

// keyOfEnv is the key whose variable is env.
func keyOfEnv(env string) string {
	k, _ := lookupEnv(env)
	return k.Name
}
