package promtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
)

// The part of Grafana's dashboard model the checks read (the dashboard's
// own tests in deploy/prometheus, and the live checks of its values).
// Grafana's model has many more fields, so unknown ones are allowed here.
type (
	// Dashboard is a Grafana dashboard's JSON model.
	Dashboard struct {
		UID           string `json:"uid"`
		Title         string `json:"title"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []Variable `json:"list"`
		} `json:"templating"`
		Panels []Panel `json:"panels"`
	}
	// Variable is one of the dashboard's template variables.
	Variable struct {
		Name       string          `json:"name"`
		Type       string          `json:"type"`
		Query      json.RawMessage `json:"query"`
		Definition string          `json:"definition"`
		AllValue   string          `json:"allValue"`
		Datasource *Datasource     `json:"datasource"`
	}
	// Panel is a panel, or a row whose collapsed panels it holds.
	Panel struct {
		ID         int         `json:"id"`
		Type       string      `json:"type"`
		Title      string      `json:"title"`
		Datasource *Datasource `json:"datasource"`
		GridPos    struct {
			X, Y, W, H int
		} `json:"gridPos"`
		Targets []Target `json:"targets"`
		Panels  []Panel  `json:"panels"` // a collapsed row's panels
	}
	// Target is one query of a panel.
	Target struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *Datasource `json:"datasource"`
	}
	// Datasource names a data source, or a variable that picks one.
	Datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
)

// Query is one PromQL query of a dashboard, with where it comes from.
type Query struct {
	Where string // "panel <title> <refId>" or "variable <name>"
	Panel string // the panel's title; "" for a variable
	RefID string
	Expr  string // as written, with Grafana's variables
	// A query variable's name, and the label whose values it lists
	// (label_values(<expr>, <label>)); empty for a panel's query.
	Variable, Label string
}

// labelValuesRE matches a query variable's label_values(<selector>, <label>).
var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// LoadDashboard decodes the dashboard at path and returns it with every
// query in it (each query variable's selector first, then each panel
// target's expression) and the variables' values as Grafana sends them for
// "All": a query variable's allValue, the data source variable "prometheus".
func LoadDashboard(path string) (*Dashboard, []Query, map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	var d Dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if dec.More() {
		return nil, nil, nil, fmt.Errorf("%s: more than one JSON value", path)
	}
	vars := map[string]string{}
	var qs []Query
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			vars[v.Name] = "prometheus"
		case "query":
			// A multi-value variable is interpolated as a regular
			// expression; "All" as its allValue.
			vars[v.Name] = v.AllValue
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil {
				return nil, nil, nil, fmt.Errorf("variable %s: query: %w", v.Name, err)
			}
			m := labelValuesRE.FindStringSubmatch(q.Query)
			if m == nil {
				return nil, nil, nil, fmt.Errorf("variable %s: query %q is not label_values(<selector>, <label>)", v.Name, q.Query)
			}
			if v.Definition != q.Query {
				return nil, nil, nil, fmt.Errorf("variable %s: definition %q differs from its query %q", v.Name, v.Definition, q.Query)
			}
			qs = append(qs, Query{Where: "variable " + v.Name, Expr: m[1], Variable: v.Name, Label: m[2]})
		default:
			return nil, nil, nil, fmt.Errorf("variable %s: type %q is not one this package knows", v.Name, v.Type)
		}
	}
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				qs = append(qs, Query{Where: "panel " + p.Title + " " + tg.RefID, Panel: p.Title, RefID: tg.RefID, Expr: tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return &d, qs, vars, nil
}

// grafanaVarRE matches $name, ${name} and ${name:format}.
var grafanaVarRE = regexp.MustCompile(`\$\{([a-zA-Z_]\w*)(?::\w+)?\}|\$([a-zA-Z_]\w*)`)

// Expand interpolates a query's variables as Grafana does before it sends
// it: from vars, then from builtins (Grafana's $__rate_interval and the
// like). Names that are neither stay as they are, as in Grafana
// (label_replace's "$1" is one).
func Expand(expr string, vars, builtins map[string]string) string {
	return grafanaVarRE.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVarRE.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		if v, ok := vars[name]; ok {
			return v
		}
		if v, ok := builtins[name]; ok {
			return v
		}
		return m
	})
}
