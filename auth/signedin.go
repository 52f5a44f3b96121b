package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/shipkey/shipkey/internal/text"
)

// Identity is who a token set was issued to, as its tokens say: untrusted
// text, cleaned where the token or the userinfo answer is read.
type Identity struct {
	Username text.Clean // preferred_username
	Email    text.Clean
}

// Shown is "alice (alice@example.com)", "alice", "alice@example.com", or
// empty when the tokens name nobody.
func (id Identity) Shown() text.Clean {
	user, email := id.Username.String(), id.Email.String()
	switch {
	case user != "" && email != "" && !strings.EqualFold(user, email):
		return text.Concat(id.Username, text.Trusted(" ("), id.Email, text.Trusted(")"))
	case user != "":
		return id.Username
	}
	return id.Email
}

// String is Shown as a string.
func (id Identity) String() string { return id.Shown().String() }

// Is reports whether the identity is the user named (its username or its
// email, ignoring case as Keycloak does).
func (id Identity) Is(user string) bool {
	user = strings.TrimSpace(user)
	return user != "" && (strings.EqualFold(id.Username.String(), user) || strings.EqualFold(id.Email.String(), user))
}

// SignedInAs reads who signed in from a token set: the ID token's
// preferred_username and email, else the access token's when it is a JWT
// (Keycloak's are). Zero when neither names anyone.
func SignedInAs(ts *TokenSet, now time.Time) Identity {
	if ts == nil {
		return Identity{}
	}
	for _, tok := range []string{ts.IDToken, ts.AccessToken} {
		if tok == "" {
			continue
		}
		d, err := Decode(tok, now)
		if err != nil || d.Raw == nil {
			continue
		}
		user, _ := d.Raw["preferred_username"].(string)
		email, _ := d.Raw["email"].(string)
		if id := (Identity{Username: text.Sanitize(user), Email: text.Sanitize(email)}); id.String() != "" {
			return id
		}
	}
	return Identity{}
}

// checkSignedIn refuses an interactive grant's token set when r names the
// user who must sign in and someone else did (a sign-in completed by
// another local user, or the browser's other account): the session it
// opened is ended and nothing is returned.
func (c *Client) checkSignedIn(ctx context.Context, r Request, ts *TokenSet, op string) error {
	want := strings.TrimSpace(r.Username)
	if want == "" {
		return nil
	}
	id := SignedInAs(ts, c.now())
	if id.String() == "" {
		// An OpenID provider that follows the spec for the code flow puts
		// profile and email claims at userinfo, not in the ID token.
		id = c.userinfoIdentity(ctx, r.Conn, ts.AccessToken)
	}
	if id.Is(want) {
		return nil
	}
	_, _ = c.EndSession(context.WithoutCancel(ctx), r.Conn, r.ClientAuth, ts)
	who := id.Shown().Or(text.Trusted("someone the tokens do not name"))
	return &Error{Kind: KindAccessDenied, Op: op,
		Msg:  text.Cleanf("signed in as %s, not %s as asked", who, want).String(),
		Hint: text.Cleanf("nothing was stored; sign in as %s (sign out of the realm in the browser first), or do not name a username", want).String()}
}

// userinfoIdentity asks the server's userinfo endpoint (from discovery)
// whom accessToken was issued to: its preferred_username and email. Zero
// when there is no such endpoint, it does not answer 200 with JSON, or the
// answer names nobody (the profile and email scopes not granted).
func (c *Client) userinfoIdentity(ctx context.Context, conn Connection, accessToken string) Identity {
	ep, err := c.Endpoints(ctx, conn)
	if err != nil || ep.Userinfo == "" || accessToken == "" {
		return Identity{}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.Userinfo, nil)
	if err != nil {
		return Identity{}
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return Identity{}
	}
	body, err := readBody(resp)
	if err != nil || resp.StatusCode != http.StatusOK {
		return Identity{}
	}
	var claims struct {
		Username string `json:"preferred_username"`
		Email    string `json:"email"`
	}
	if json.Unmarshal(body, &claims) != nil {
		return Identity{}
	}
	return Identity{Username: text.Sanitize(claims.Username), Email: text.Sanitize(claims.Email)}
}
