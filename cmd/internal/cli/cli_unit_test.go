package cli

import (
	"bytes"
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

func TestChildEnv(t *testing.T) {
	t.Parallel()
	env := []string{"HOME=/h", "SHIPKEY_PASSWORD=pw", "SHIPKEY_CLIENT_SECRET=cs", "SHIPKEY_PASSPHRASE=pp",
		"API_TOKEN=old", "SHIPKEY_KEY=prod", "PATH=/bin"}
	got := childEnv(env, "API_TOKEN", "tok")
	want := []string{"HOME=/h", "SHIPKEY_KEY=prod", "PATH=/bin", "API_TOKEN=tok"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("childEnv = %q, want %q", got, want)
	}
}

func TestChildExit(t *testing.T) {
	t.Parallel()
	if err := childExit(nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		script string
		want   int
	}{{"exit 5", 5}, {"kill -TERM $$", 128 + 15}, {"kill -KILL $$", 128 + 9}} {
		err := exec.Command("sh", "-c", tc.script).Run()
		got := childExit(err)
		if exitCode(got) != tc.want || !silent(got) {
			t.Errorf("%s: exit %d (silent %v), want %d", tc.script, exitCode(got), silent(got), tc.want)
		}
	}
	_, err := exec.LookPath("no-such-command-shipkey")
	if got := commandError("no-such-command-shipkey", err); exitCode(got) != exitNotFound || !strings.Contains(got.Error(), "command not found") {
		t.Errorf("not found: %v (%d)", got, exitCode(got))
	}
}

func TestKeyStatus(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	tok := func(obtained, access, refresh time.Duration) auth.TokenSet {
		ts := auth.TokenSet{ObtainedAt: now.Add(obtained)}
		if access != 0 {
			ts.AccessExpiresAt = ts.ObtainedAt.Add(access)
		}
		if refresh != 0 {
			ts.RefreshExpiresAt = ts.ObtainedAt.Add(refresh)
		}
		return ts
	}
	for _, tc := range []struct {
		name   string
		key    store.Key
		state  string
		usable bool
		detail string
	}{
		{"valid", store.Key{Label: "k", Token: tok(-time.Minute, time.Hour, 2*time.Hour)}, stateValid, true, "valid until 2026-11-21 12:59:00 UTC"},
		// Inside the margin is still valid: renewal ahead is the token source's business.
		{"due", store.Key{Label: "k", Token: tok(-59*time.Minute-50*time.Second, time.Hour, 2*time.Hour)}, stateValid, true, "valid until"},
		{"unstated", store.Key{Label: "k", Token: tok(-time.Minute, 0, 0)}, stateValid, true, "valid (expiry: not stated)"},
		{"refreshable", store.Key{Label: "k", Token: tok(-2*time.Hour, time.Hour, 3*time.Hour)}, stateRefreshable, true, "refresh by 2026-11-21 13:00:00 UTC"},
		{"both expired", store.Key{Label: "prod eu", Token: tok(-4*time.Hour, time.Hour, 3*time.Hour)}, stateLoginNeeded, false, "run: shipkey login 'prod eu'"},
		{"both expired, remembered", store.Key{Label: "k", Definition: store.Definition{RememberPassword: true}, Token: tok(-4*time.Hour, time.Hour, 3*time.Hour)}, stateRefreshable, true, "remembered password"},
		{"user logout", store.Key{Label: "k", LoggedOut: true}, stateLoggedOut, false, "logged out; run: shipkey login k"},
		{"user logout, remembered", store.Key{Label: "k", Definition: store.Definition{RememberPassword: true}, LoggedOut: true}, stateLoggedOut, true, "remembered password"},
		{"refresh refused", store.Key{Label: "k", LoggedOut: true, Token: tok(-2*time.Hour, time.Hour, 3*time.Hour)}, stateSessionEnded, false, "session ended"},
		{"refresh expired, marked", store.Key{Label: "k", LoggedOut: true, Token: tok(-4*time.Hour, time.Hour, 3*time.Hour)}, stateLoginNeeded, false, "the refresh token expired"},
		// Without a refresh token a key is never refreshable: its grant runs
		// again by itself (client credentials), or a person logs in.
		{"client credentials, expired", store.Key{Label: "svc", Definition: store.Definition{Grant: auth.GrantClientCredentials}, Token: tok(-2*time.Hour, time.Hour, 0)}, stateRenewsItself, true, "renews itself with the client-credentials grant"},
		{"client credentials, logged out", store.Key{Label: "svc", Definition: store.Definition{Grant: auth.GrantClientCredentials}, LoggedOut: true}, stateLoggedOut, true, "grant gets a new token at the next use"},
		{"no refresh token, password", store.Key{Label: "k", Token: tok(-2*time.Hour, time.Hour, 0)}, stateLoginNeeded, false, "there is no refresh token; run: shipkey login k"},
		{"no refresh token, remembered", store.Key{Label: "k", Definition: store.Definition{RememberPassword: true}, Token: tok(-2*time.Hour, time.Hour, 0)}, stateRefreshable, true, "remembered password"},
		{"device code, expired", store.Key{Label: "d", Definition: store.Definition{Grant: auth.GrantDeviceCode}, Token: tok(-2*time.Hour, time.Hour, 0)}, stateLoginNeeded, false, "no refresh token"},
		// No refresh expiry to go by: the server's word cannot be claimed.
		{"marked, unstated refresh", store.Key{Label: "k", LoggedOut: true, Token: tok(-2*time.Hour, time.Hour, 0)}, stateLoginNeeded, false, "login needed; run"},
	} {
		// As the store reports it: a stored refresh expiry comes with a
		// refresh token.
		tc.key.HasRefreshToken = !tc.key.Token.RefreshExpiresAt.IsZero()
		v := keyStatus(tc.key, now)
		if v.State != tc.state || v.Usable != tc.usable || !strings.Contains(v.Detail, tc.detail) {
			t.Errorf("%s: %+v, want state %s usable %v detail containing %q", tc.name, v, tc.state, tc.usable, tc.detail)
		}
	}
}

func TestReportEnd(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	key := store.Key{Label: "k", Token: auth.TokenSet{ObtainedAt: now, AccessExpiresAt: now.Add(time.Hour)}}
	for _, tc := range []struct {
		name string
		res  auth.EndResult
		err  error
		code int
		want string
	}{
		{"logout", auth.EndResult{Via: "logout"}, nil, 0, "Done: ended the session at the server (logout) (next)"},
		{"revocation", auth.EndResult{Via: "revocation"}, nil, 0, "ended the session at the server (revocation)"},
		{"already", auth.EndResult{Via: "logout", AlreadyEnded: true}, nil, 0, "the server said the session had already ended"},
		{"no way", auth.EndResult{}, nil, 0, "Done: dropped; the server offers no way to end a session, so the tokens stay valid there until they expire (the access token until 2026-11-21 13:00:00 UTC) (next)"},
		{"refused", auth.EndResult{}, &auth.Error{Kind: auth.KindServer, Op: "logout", Msg: "boom"}, 1, "Done: dropped, but the server refused to end the session"},
		{"unreachable", auth.EndResult{}, &auth.Error{Kind: auth.KindNetwork, Op: "logout", Msg: "down", Err: errors.New("x")}, 1, "could not be reached"},
	} {
		var w bytes.Buffer
		err := reportEnd(text.NewWriter(&w), "Done", "dropped", "next", key, tc.res, tc.err, now)
		said := w.String()
		if err != nil {
			said = err.Error()
		}
		if exitCode(err) != tc.code || !strings.Contains(said, tc.want) {
			t.Errorf("%s: exit %d, said %q; want %d and %q", tc.name, exitCode(err), said, tc.code, tc.want)
		}
	}
}
