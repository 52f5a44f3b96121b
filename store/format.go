package store

// String names the status for machines and JSON: "no_token", "valid",
// "refreshable", "login_needed".
func (s Status) String() string {
	switch s {
	case StatusValid:
		return "valid"
	case StatusRefreshable:
		return "refreshable"
	case StatusLoginNeeded:
		return "login_needed"
	default:
		return "no_token"
	}
}
