package store

// String names the status for machines and JSON: "no_token", "valid",
// "refreshable", "login_needed", "renews_itself".
func (s Status) String() string {
	switch s {
	case StatusValid:
		return "valid"
	case StatusRefreshable:
		return "refreshable"
	case StatusLoginNeeded:
		return "login_needed"
	case StatusRenewsItself:
		return "renews_itself"
	default:
		return "no_token"
	}
}
