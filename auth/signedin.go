package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/shipkey/shipkey/internal/text"
)

// Identity is who a token set was issued to, as its tokens say (untrusted
// text, made safe for a terminal).
type Identity struct {
	Username string // preferred_username
	Email    string
}

// String is "alice (alice@example.com)", "alice", "alice@example.com", or
// "" when the tokens name nobody.
func (id Identity) String() string {
	switch {
	case id.Username != "" && id.Email != "" && !strings.EqualFold(id.Username, id.Email):
		return id.Username + " (" + id.Email + ")"
	case id.Username != "":
		return id.Username
	}
	return id.Email
}

// Is reports whether the identity is the user named (its username or its
// email, ignoring case as Keycloak does).
func (id Identity) Is(user string) bool {
	user = strings.TrimSpace(user)
	return user != "" && (strings.EqualFold(id.Username, user) || strings.EqualFold(id.Email, user))
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
		if id := (Identity{Username: text.Safe(user), Email: text.Safe(email)}); id.String() != "" {
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
	who := "someone the tokens do not name"
	if s := id.String(); s != "" {
		who = s
	}
	return &Error{Kind: KindAccessDenied, Op: op,
		Msg:  "signed in as " + who + ", not " + text.Safe(want) + " as asked",
		Hint: "nothing was stored; sign in as " + text.Safe(want) + " (sign out of the realm in the browser first), or do not name a username"}
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
	return Identity{Username: text.Safe(claims.Username), Email: text.Safe(claims.Email)}
}
