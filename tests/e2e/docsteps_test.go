package e2e

import (
	"strings"
	"testing"
)

const docSample = "# Trying it\n\n" +
	"```sh node\nkubectl create secret generic a --from-literal=x=y\nkubectl create secret generic b \\\n  --from-literal=x=y\n```\n\n" +
	"Prints:\n\n```text output\nsecret/a created\nsecret/b created\n```\n\n" +
	"```sh\nnot run\n```\n\n" +
	"- a list item:\n  ```sh node\n  $ kubectl get pods\n  NAME  READY\n  app-7d8f9c6b5d-2xk4p  2/2\n  $ kubectl get deploy app \\\n      -o name\n  deployment.apps/app\n  ```\n\n" +
	"```sh node\nkubectl apply -k deploy/k8s\n```\n\n```yaml\nnot: output\n```\n\n```text output\norphan\n```\n\n" +
	"```sh node helm\nhelm install app deploy/helm/electd\n```\n\n```sh node\nkubectl get pods\n```\n"

func TestNodeStepsFollowTheMarking(t *testing.T) {
	steps, err := NodeSteps("doc.md", docSample)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		line    int
		command string
		compare bool
		out     string
		session string
	}
	wants := []want{
		{4, "kubectl create secret generic a --from-literal=x=y\nkubectl create secret generic b \\\n  --from-literal=x=y", true, "secret/a created\nsecret/b created", ""},
		{22, "kubectl get pods", true, "NAME  READY\napp-7d8f9c6b5d-2xk4p  2/2", ""},
		{25, "kubectl get deploy app \\\n    -o name", true, "deployment.apps/app", ""},
		{31, "kubectl apply -k deploy/k8s", false, "", ""},
		{43, "helm install app deploy/helm/electd", false, "", "helm"},
		{47, "kubectl get pods", false, "", ""},
	}
	if len(steps) != len(wants) {
		t.Fatalf("%d steps, want %d: %+v", len(steps), len(wants), steps)
	}
	for i, w := range wants {
		s := steps[i]
		if s.Line != w.line || s.Command != w.command || s.Compare != w.compare || strings.Join(s.Want, "\n") != w.out || s.Session != w.session {
			t.Errorf("step %d = %s %q compare=%v want %q session %q; want line %d %q compare=%v %q session %q",
				i, s.Where(), s.Command, s.Compare, s.Want, s.Session, w.line, w.command, w.compare, w.out, w.session)
		}
	}
	sessions := Sessions(steps)
	if len(sessions) != 2 || len(sessions[0]) != 5 || sessions[1][0].Session != "helm" {
		t.Errorf("sessions %+v, want the file's five steps, then helm's", sessions)
	}
	if _, err := NodeSteps("bad.md", "```sh node\nkubectl get pods\n"); err == nil {
		t.Error("an unclosed fence: no error")
	}
}

// What differs between two runs of the same commands (generated names,
// ages, addresses, ports, tokens, times, the order of rows) does not count;
// anything else does: a doc that drifts from what the commands print
// fails, here with a deliberate drift in each kind of output.
func TestCompareOutputIgnoresRunsAndCatchesDrift(t *testing.T) {
	lines := func(s string) []string { return strings.Split(s, "\n") }
	pods := lines(`NAME                    READY   STATUS    RESTARTS   AGE
app-6cf5c8654c-9wcqc    1/2     Running   0          2m3s
app-6cf5c8654c-vdmkd    2/2     Running   0          2m3s
app-6cf5c8654c-zczp9    1/2     Running   0          2m4s`)
	status := lines(`+ Election: /services/app (latch) at http://localhost:4040 +-----------+------------+-------+
| 1 | app-5f87cd5479-fgdsp * | 10.244.1.17:8080 | Leader   | connected | 8589934599 | 5.02s |
| 2 | app-5f87cd5479-lx7xf   | 10.244.2.4:8080  | Follower | joined    | 8589934601 |       |
* app-5f87cd5479-fgdsp (asked): leader`)
	helm := []string{"NAME: app", "LAST DEPLOYED: Fri Dec  4 09:01:02 2026", "NAMESPACE: default", "STATUS: deployed", "REVISION: 1", ""}
	type drift struct {
		why  string   // what the doc does not show
		run  []string // the output with it
		says string   // a word the diff must show, if any
	}
	for _, tc := range []struct {
		what     string
		doc, run []string // run: the doc's commands in another run (nil: none)
		drifts   []drift
	}{
		{"the same pods", lines(`NAME                   READY   STATUS    RESTARTS   AGE
app-7d8f9c6b5d-2xk4p   2/2     Running   0          40s
app-7d8f9c6b5d-8q7wz   1/2     Running   0          40s
app-7d8f9c6b5d-zz9v2   1/2     Running   0          41s`), pods, []drift{
			{"a restart", replaced(pods, 2, "app-6cf5c8654c-vdmkd    2/2     Running   1          2m3s"), ""},
			{"two pods where it shows three", pods[:3], ""},
		}},
		{"electd status", lines(`+ Election: /services/app (latch) at http://localhost:4040 ---------+------------+-------+
| 1 | app-794dfc8948-p76xj * | 198.18.0.8:8080  | Leader   | connected | 4294967310 | 6.18s |
...
* app-794dfc8948-p76xj (asked): leader`), status, []drift{
			{"a follower where it shows the leader", replaced(status, 3, "* app-5f87cd5479-fgdsp (asked): following app-5f87cd5479-lx7xf"), "following"},
		}},
		{"helm install at another time", []string{"NAME: app", "LAST DEPLOYED: Thu Nov 26 20:11:30 2026", "NAMESPACE: default", "STATUS: deployed", "REVISION: 1"}, helm, []drift{
			{"a failed release", replaced(helm[:5], 3, "STATUS: failed"), ""},
		}},
		// A UUID whose group reads as a duration (445d): masked as an id,
		// not as a time (CI's run at 47ea01c).
		{"another election node", []string{`{"leader":{"node":"_c_7a3d757a-0d0c-4484-a7de-66aa5fe64779-latch-0000000000"}}`},
			[]string{`{"leader":{"node":"_c_911aea44-7bbd-445d-a0fa-b02e93e349fd-latch-0000000000"}}`}, []drift{
				{"another mode's node", []string{`{"leader":{"node":"_c_911aea44-7bbd-445d-a0fa-b02e93e349fd-race-0000000000"}}`}, "race"},
			}},
		{"the Secrets", []string{"secret/electd-zookeeper-auth created", "secret/electd-admin created"}, nil, []drift{
			{"Secrets of other names", []string{"secret/app-electd-zookeeper-auth created", "secret/app-electd-admin created"}, ""},
		}},
	} {
		if ok, diff := CompareOutput(tc.doc, tc.run); tc.run != nil && !ok {
			t.Errorf("%s in another run differ:\n%s", tc.what, diff)
		}
		for _, d := range tc.drifts {
			if ok, diff := CompareOutput(tc.doc, d.run); ok || !strings.Contains(diff, d.says) {
				t.Errorf("%s: %s passed: ok=%v\n%s", tc.what, d.why, ok, diff)
			}
		}
	}
}

// replaced is lines with line i replaced by l.
func replaced(lines []string, i int, l string) []string {
	out := append([]string(nil), lines...)
	out[i] = l
	return out
}
