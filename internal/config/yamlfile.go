package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Bounds on the shape of a configuration file, far above any real one
// (31 keys; four levels: the file, a section, a list, its items) and far below what hurts:
// yaml.v3 compares every key of a mapping with every other, and builds an
// error per duplicate pair, so 2,000 copies of one key cost 2 s and 360 MB,
// and a 1 MiB file of distinct keys took 55 s. The file is parsed once, to
// nodes (linear), checked, and only then decoded.
const (
	maxYAMLNodes    = 4096
	maxYAMLDepth    = 8
	maxYAMLMapItems = 64
)

// parseYAML parses a configuration file into nested maps, for viper's
// MergeConfigMap. A file without a document is an empty configuration;
// otherwise the document must be a mapping. Errors are *KeyError naming
// "config", or the key that is set twice.
func parseYAML(b []byte) (map[string]any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, errorf("config", "does not parse as YAML: %v", err)
	}
	m := map[string]any{}
	if len(doc.Content) == 0 {
		return m, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return m, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, errorf("config", "must be a mapping of keys, not %s", kindName(root))
	}
	nodes := 0
	if err := checkShape(root, "", 1, &nodes); err != nil {
		return nil, err
	}
	if err := root.Decode(&m); err != nil {
		return nil, errorf("config", "does not parse as YAML: %v", err)
	}
	return m, nil
}

// checkShape walks n without following aliases: node count, depth, mapping
// size, and keys set twice (found here in linear time).
func checkShape(n *yaml.Node, path string, depth int, nodes *int) error {
	*nodes++
	switch {
	case *nodes > maxYAMLNodes:
		return errorf("config", "more than %d YAML nodes; a configuration has about 70", maxYAMLNodes)
	case depth > maxYAMLDepth:
		return errorf("config", "nested deeper than %d levels; a configuration has 4", maxYAMLDepth)
	case n.Kind == yaml.MappingNode && len(n.Content) > 2*maxYAMLMapItems:
		return errorf(orConfig(path), "more than %d entries in one mapping; the largest section has 13 keys", maxYAMLMapItems)
	}
	seen := map[string]bool{}
	for i, c := range n.Content {
		sub := path
		if n.Kind == yaml.MappingNode && i%2 == 0 {
			name := strings.ToLower(c.Value)
			if seen[name] && c.Kind == yaml.ScalarNode {
				return errorf(keyPath(path, name), "set twice in the file")
			}
			seen[name] = true
		}
		if n.Kind == yaml.MappingNode && i%2 == 1 {
			sub = keyPath(path, strings.ToLower(n.Content[i-1].Value))
		}
		if err := checkShape(c, sub, depth+1, nodes); err != nil {
			return err
		}
	}
	return nil
}

func keyPath(path, name string) string {
	name = showKey(name)
	if path == "" {
		return name
	}
	return path + "." + name
}

// showKey shows a key from a file in an error: as it is when it looks like
// a key (or a dotted path of keys), else quoted and cut; YAML keys may hold
// anything, newlines and a megabyte included.
func showKey(name string) string {
	if name != "" && len(name) <= 64 && strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_.-") == "" {
		return name
	}
	return quote(name)
}

func orConfig(path string) string {
	if path == "" {
		return "config"
	}
	return path
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a single value"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document of another kind"
}
