package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/electd/electd/internal/config"
)

// referenceTemplate is docs/configuration.md's prose around the tables. A
// sub-template named "section NAME" introduces that section's table.
//
//go:embed configuration.md.tmpl
var referenceTemplate string

// section is one table of the reference: a section's keys, or the
// top-level keys (Name "").
type section struct {
	Name string
	Rows []row
}

// row is one key as the reference shows it; every field is Markdown.
type row struct {
	Key, Env, Type, Default, What string
}

// reference is docs/configuration.md: the template's prose, and one table
// per section in the table's order (the top-level keys first).
func reference() ([]byte, error) {
	var t *template.Template
	t, err := template.New("configuration.md").Funcs(template.FuncMap{
		// intro runs the sub-template "section NAME" when there is one.
		"intro": func(name string) (string, error) {
			sub := t.Lookup("section " + name)
			if sub == nil {
				return "", fmt.Errorf("configuration.md.tmpl: no {{define \"section %s\"}}", name)
			}
			var b bytes.Buffer
			err := sub.Execute(&b, nil)
			return strings.TrimSpace(b.String()), err
		},
	}).Parse(referenceTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, sections(config.Keys())); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sections groups keys by section, in the order the sections first appear,
// the top-level keys first.
func sections(keys []config.Key) []section {
	secs := []section{{Name: ""}}
	for _, k := range keys {
		i := slices.IndexFunc(secs, func(s section) bool { return s.Name == k.Section() })
		if i < 0 {
			secs = append(secs, section{Name: k.Section()})
			i = len(secs) - 1
		}
		secs[i].Rows = append(secs[i].Rows, rowOf(k))
	}
	return secs
}

func rowOf(k config.Key) row {
	r := row{
		Key:     code(k.Name),
		Env:     code(k.Env),
		Type:    k.Type,
		Default: code(k.Default),
		What:    cell(k.Help) + ".",
	}
	switch {
	case k.Required:
		r.Default = "required"
	case k.Computed != "":
		r.Default = cell(k.Computed)
	case k.Default == "":
		r.Default = "empty"
	}
	if k.Secret {
		r.What += " A secret: masked by `--validate`, never quoted in errors."
		if k.File != "" {
			r.What += " Or read from the file that " + code(k.File) + " names."
		}
	}
	return r
}

// code is s as inline code in a table cell.
func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

// cell is s as plain text in a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
