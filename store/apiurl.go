package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// CheckAPIURL checks an API base URL (a key's api_url) and returns it
// without a trailing slash: an absolute https URL (http only to loopback,
// where shipkey api sends tokens at all), with no query, fragment or user
// info. Empty is valid: no base URL.
func CheckAPIURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || !text.IsClean(s):
		return "", fmt.Errorf("%s is not a URL; give the API's base URL, such as https://api.example.com/v1", text.ShellQuote(s))
	case u.Scheme == "http" && !auth.IsLoopback(u.Hostname()):
		return "", fmt.Errorf("%s: plain http is only for loopback (a token must not travel unencrypted); use https", text.ShellQuote(s))
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", fmt.Errorf("%s: a base URL has no user, query or fragment", text.ShellQuote(s))
	}
	return strings.TrimRight(s, "/"), nil
}

// SetAPIURL sets (or with "" clears) the base URL of the API a key's tokens
// are for (api_url in config.toml). Nothing else of the key changes.
func (s *Store) SetAPIURL(label, apiURL string) error {
	clean, err := CheckAPIURL(apiURL)
	if err != nil {
		return err
	}
	return s.update(context.Background(), func(t *tx) error {
		e, ok, err := t.byLabel(label)
		if err != nil {
			return err
		}
		if !ok {
			return notFoundError(label)
		}
		return t.changeEntry(e.ID, func(e *keyEntry) { e.APIURL = clean })
	})
}
