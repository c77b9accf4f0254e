package electdtest

// ViewOf is LeaderNow, failing the test when GET /leader does not answer 200.
func (m *Member) ViewOf() LeaderView {
	m.t.Helper()
	v, err := m.LeaderNow()
	if err != nil {
		m.t.Fatalf("%s: GET /leader: %v", m.Name, err)
	}
	return v
}
