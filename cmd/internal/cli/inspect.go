package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// inspectOptions decodes a token's claims.
type inspectOptions struct {
	IO    *iostreams
	Now   func() time.Time
	Store func() (*store.Store, error)
	Auth  func() (*auth.Client, error)
	// Team is the team engine, for a team key's cached token ("T/LABEL";
	// nil: none linked); Secrets take the token read.
	Team    func() (team.Engine, error)
	Secrets *secretSet

	Token  string // the argument: a token, "-" for stdin, or "" for a key's token
	Key    string // --key
	JSON   bool
	Verify bool
	JWKS   string // --jwks: a key set (file or URL) to verify against
}

func newCmdInspect(f *factory, runF func(context.Context, *inspectOptions) error) *cobra.Command {
	opts := &inspectOptions{IO: f.IO, Now: f.Now, Store: f.Store, Auth: f.Auth}
	opts.Team, opts.Secrets = f.engine(), f.Secrets
	cmd := &cobra.Command{
		Use:   "inspect [TOKEN | -]",
		Short: "Decode a token's claims (and check its signature with --verify)",
		Long: `Decode a token's header and claims without trusting it: times shown absolute
and relative, roles listed, the signature checked against the realm's keys with
--verify (only for issuers of your own keys; no URL named by the token is
fetched). The realm's keys are found through its discovery document, at the
issuer or beside the token endpoint, else at Keycloak's certs path. With
--jwks FILE|URL the signature is checked against a key set you were given
(JWK Set JSON or a PEM public key or certificate), whoever issued the token.

Without TOKEN it inspects the current access token of a key (--key, else
SHIPKEY_KEY, else the default key, else the only key) and asks the server
whether it still accepts it.

Prefer "-" to read the token from stdin: a token given as an argument is
visible to other users in the process list and stays in your shell history.

Exit codes: 0 when the signature was verified or --verify was not given; 1
when --verify was given and the signature failed or could not be checked, or
when the server no longer accepts the key's token. The report is printed
first either way.`,
		Example: `  shipkey inspect
  shipkey token other | shipkey inspect - --verify
  shipkey inspect - --jwks realm-keys.json < token.txt
  printenv TOKEN | shipkey inspect - --json`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Token = labelArg(args)
			if opts.Token != "" && opts.Key != "" {
				return usageErrorf("give either a token or --key, not both (see: %s --help)", cmd.CommandPath())
			}
			if opts.JWKS != "" {
				opts.Verify = true
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return inspectRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&opts.Verify, "verify", false, "check the signature against the realm's published keys")
	cmd.Flags().StringVar(&opts.JWKS, "jwks", "", "check the signature against this key set instead: a file or URL holding a JWK Set or a PEM public key (implies --verify)")
	cmd.Flags().StringVar(&opts.Key, "key", "", "inspect this key's current access token")
	_ = cmd.RegisterFlagCompletionFunc("key", completeLabelFlag(f))
	return cmd
}

// inspection is what inspect found out.
type inspection struct {
	Label    string // the key whose token it is, or ""
	Decoded  *auth.Decoded
	Verified *auth.Verification
	Live     *auth.Liveness
	// KeyJKT and KeyX5T are the key's DPoP key and client certificate
	// thumbprints ("" for a pasted token or a key without them): a bound
	// token's cnf is checked against them.
	KeyJKT, KeyX5T string
	// Skew is how far the JWT's exp is from obtained-at + expires_in, for a
	// key's token, when that exceeds auth.SkewTolerance (zero otherwise).
	Skew time.Duration
}

func inspectRun(ctx context.Context, opts *inspectOptions) error {
	var in inspection
	token, err := inspectToken(ctx, opts, &in)
	if err != nil {
		return err
	}
	now := opts.Now()
	in.Decoded, err = auth.Decode(token, now)
	if err != nil {
		return fmt.Errorf("cannot decode the token: %w", err)
	}
	if in.Decoded.Format == auth.FormatOpaque && opts.Token != "" && opts.Token != "-" && in.Label == "" {
		labelHint(opts)
	}
	if opts.Verify && in.Decoded.Format == auth.FormatJWT {
		v, err := inspectVerify(ctx, opts, token)
		if err != nil {
			return err
		}
		in.Verified = &v
	}
	if in.Label != "" {
		st, err := opts.Store()
		if err != nil {
			return err
		}
		l, err := st.Liveness(ctx, in.Label)
		if err != nil {
			l = auth.Liveness{State: auth.LiveUnknown, Reason: text.Sanitize(err.Error())}
		}
		in.Live = &l
	}
	if opts.JSON {
		err = writeInspectionJSON(opts.IO.Out, in, opts.Verify)
	} else {
		err = writeInspection(opts.IO.Out, in, opts.Verify, now)
	}
	if err != nil {
		return err
	}
	return inspectVerdict(in, opts.Verify, now)
}

// inspectVerdict is inspect's exit, once everything is printed: 1 when
// --verify was asked and the signature failed or could not be checked, or
// when the server no longer accepts the key's token; nil otherwise.
func inspectVerdict(in inspection, verifyAsked bool, now time.Time) error {
	var problems []text.Clean
	if verifyAsked {
		switch {
		case in.Verified == nil:
			problems = append(problems, text.Cleanf("the signature cannot be checked (%s)", unverifiableWhy(in.Decoded)))
		case in.Verified.State == auth.SigFailed:
			problems = append(problems, sigProblem(text.Trusted("the signature is not valid"), in.Verified.Reason))
		case in.Verified.State != auth.SigVerified:
			problems = append(problems, sigProblem(text.Trusted("the signature could not be checked"), in.Verified.Reason))
		}
	}
	if in.Live != nil && in.Live.State == auth.LiveInactive {
		if in.Decoded.Format == auth.FormatJWT && !in.Decoded.ExpiresAt.IsZero() && !now.Before(in.Decoded.ExpiresAt) {
			problems = append(problems, text.Cleanf("the access token of API key %s has expired; shipkey token %s renews it (a login is needed only when that fails)",
				in.Label, text.ShellQuote(in.Label)))
		} else {
			problems = append(problems, text.Cleanf("the server no longer accepts the access token of API key %s (revoked, or its session ended); "+
				"shipkey token --force-refresh %s gets a new one from its refresh token, and only when that is refused too is a login needed: shipkey login %s",
				in.Label, text.ShellQuote(in.Label), text.ShellQuote(in.Label)))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &exitError{code: exitFailure, err: errors.New(text.Join(problems, text.Trusted("; ")).String())}
}

// sigProblem is what is wrong with the signature, and why when known.
func sigProblem(what, reason text.Clean) text.Clean {
	if reason.IsEmpty() {
		return what
	}
	return text.Concat(what, text.Trusted(": "), reason)
}

// unverifiableWhy says why a token that was never checked cannot be.
func unverifiableWhy(d *auth.Decoded) string {
	switch d.Format {
	case auth.FormatOpaque:
		return "an opaque token has no signature a client can check"
	case auth.FormatJWE:
		return "an encrypted token (JWE) can be read and checked only by its recipient"
	}
	return "see Signature above"
}

// inspectToken finds the token to inspect: the argument, stdin for "-", or
// the resolved key's current access token (recording its label in in).
//
// A key's access token that has expired is renewed first, as token does
// (the server would only say it no longer accepts it, which reads as a
// session that ended); when the renewal fails, the expired one is shown.
func inspectToken(ctx context.Context, opts *inspectOptions, in *inspection) (string, error) {
	switch opts.Token {
	case "-":
		return tokenFromStdin(opts.IO.In)
	case "":
		st, err := opts.Store()
		if err != nil {
			return "", err
		}
		got, err := newKeys(st, opts.Team, opts.IO, opts.Secrets, opts.Now, nil).TokenToInspect(ctx, opts.Key)
		if opts.Key == "" && errors.Is(err, store.ErrNoKeys) {
			return "", usageErrorf("no token to inspect and no API keys here: give one on stdin (shipkey inspect -) or as an argument")
		}
		if err != nil {
			return "", err
		}
		key, ts := got.Key, got.Token
		if got.Renewed {
			opts.IO.ErrText().Linef("shipkey: the access token of API key %s had expired; renewed it first (as shipkey token does)", key.Shown())
		}
		in.Label, in.KeyJKT, in.KeyX5T = key.Label, got.KeyJKT, got.KeyX5T
		if skew, bad := ts.Skew(); bad {
			in.Skew = skew
		}
		return ts.AccessToken, nil
	default:
		return text.BearerToken(opts.Token), nil
	}
}

// writeInspection prints the human form. Claims, the signature's and the
// server's verdicts come clean from auth; w takes nothing else.
func writeInspection(out io.Writer, in inspection, verifyAsked bool, now time.Time) error {
	w := text.NewWriter(out)
	d := in.Decoded
	if in.Label != "" {
		w.Linef("Key:       %s", in.Label)
	}
	switch d.Format {
	case auth.FormatOpaque:
		w.Line(text.Trusted("Token:     opaque (not a JWT; there are no claims to decode)"))
	case auth.FormatJWE:
		w.Line(text.Trusted("Token:     JWE, encrypted (its claims are readable only by its recipient)"))
		w.Line()
		writeClaims(out, text.Trusted("Header"), d.Header)
	default:
		kind := text.Trusted("JWT")
		if d.Typ != "" {
			kind = text.Cleanf("JWT, %s token", d.Typ)
		}
		w.Linef("Token:     %s", kind)
		if !d.ExpiresAt.IsZero() {
			state := "valid"
			if !now.Before(d.ExpiresAt) {
				state = "expired"
			}
			w.Linef("Expiry:    %s (%s)", state, text.Relative(d.ExpiresAt, now))
		}
		if b := d.Binding(in.KeyJKT, in.KeyX5T); b != "" {
			w.Linef("Bound to:  %s", b)
		}
		if in.Skew != 0 {
			w.Linef("Clock:     exp and expires_in disagree by %s: this machine's clock or the server's is off", in.Skew.Round(time.Second))
		}
		for _, f := range d.FutureTimes(now) {
			w.Linef("Clock:     %s", f.Warning())
		}
		w.Line()
		writeClaims(out, text.Trusted("Header"), d.Header)
		w.Line()
		writeClaims(out, text.Trusted("Payload"), d.Payload)
		w.Line()
		w.Linef("Signature: %s", signatureLine(d, in.Verified, verifyAsked))
	}
	switch {
	case in.Live != nil:
		w.Linef("Server:    %s", livenessLine(d, *in.Live, now))
	case verifyAsked && in.Label == "":
		// A pasted token: the server is asked only about a key's token
		// (it has the client to ask with).
		w.Linef("Server:    %s", text.Trusted(pastedLiveness))
	}
	return nil
}

// pastedLiveness is the Server line of a pasted token under --verify.
const pastedLiveness = "not asked: whether the server still accepts it needs its key (inspect --verify --key LABEL)"

func writeClaims(out io.Writer, title text.Clean, claims []auth.Claim) {
	text.NewWriter(out).Line(title)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	w := text.NewWriter(tw)
	for _, c := range claims {
		value := c.Display
		if value.IsEmpty() && len(c.Items) > 0 {
			value = text.Join(c.Items, text.Trusted(", "))
		}
		w.Linef("  %s\t%s", c.Name, value)
	}
	tw.Flush()
}

func signatureLine(d *auth.Decoded, v *auth.Verification, asked bool) text.Clean {
	switch {
	case v != nil:
		line := text.Sanitize(v.State.String())
		if v.State == auth.SigVerified && !v.KeyID.IsEmpty() {
			line = text.Cleanf("%s (key %s)", line, v.KeyID)
		}
		if !v.Reason.IsEmpty() {
			line = text.Cleanf("%s: %s", line, v.Reason)
		}
		return line
	case d.SymmetricSigned:
		return text.Cleanf("not verified: HMAC-signed (%s): a client cannot check it", d.Alg)
	case asked:
		return text.Trusted("not verified")
	default:
		return text.Trusted("not checked (pass --verify)")
	}
}

// livenessLine is the server's verdict in one flat sentence: the reason,
// and the server's words, after a colon.
func livenessLine(d *auth.Decoded, l auth.Liveness, now time.Time) string {
	reason := ""
	if detail := l.Detail(); !detail.IsEmpty() {
		reason = ": " + detail.String()
	}
	switch l.State {
	case auth.LiveActive:
		return "the server accepts this token (" + l.Via.String() + ")"
	case auth.LiveInactive:
		if d.Format == auth.FormatJWT && now.Before(d.ExpiresAt) {
			return "valid until " + text.Stamp(d.ExpiresAt) +
				", but the server no longer accepts it" + reason
		}
		return "the server no longer accepts this token" + reason
	default:
		return "cannot tell whether the server accepts it" + reason
	}
}

// inspectionJSON is `inspect --json`.
type inspectionJSON struct {
	Format    string         `json:"format"`
	Key       string         `json:"key,omitempty"`
	Header    map[string]any `json:"header,omitempty"`
	Payload   any            `json:"payload,omitempty"`
	ExpiresAt *string        `json:"expires_at,omitempty"`
	Signature *signatureJSON `json:"signature,omitempty"`
	Liveness  *livenessJSON  `json:"liveness,omitempty"`
	// ClockSkewSeconds is exp minus obtained-at + expires_in, when over a minute.
	ClockSkewSeconds int64 `json:"clock_skew_seconds,omitempty"`
}

type signatureJSON struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	KeyID  string `json:"key_id,omitempty"`
	Issuer string `json:"issuer,omitempty"`
}

type livenessJSON struct {
	State  string `json:"state"`
	Via    string `json:"via,omitempty"`
	Reason string `json:"reason,omitempty"`
}

func writeInspectionJSON(w io.Writer, in inspection, verifyAsked bool) error {
	d := in.Decoded
	out := inspectionJSON{Format: "opaque", Key: in.Label, ClockSkewSeconds: int64(in.Skew / time.Second)}
	if d.Format == auth.FormatJWE {
		out.Format = "jwe"
		out.Header = headerJSON(d)
	}
	if d.Format == auth.FormatJWT {
		out.Format = "jwt"
		out.Header = headerJSON(d)
		out.Payload = sanitizeJSON(map[string]any(d.Raw))
		out.ExpiresAt = rfc3339OrNil(d.ExpiresAt)
		switch {
		case in.Verified != nil:
			out.Signature = &signatureJSON{State: in.Verified.State.String(), Reason: in.Verified.Reason.String(),
				KeyID: in.Verified.KeyID.String(), Issuer: in.Verified.Issuer.String()}
		case verifyAsked || d.SymmetricSigned:
			out.Signature = &signatureJSON{State: auth.SigNotChecked.String()}
		}
	}
	if in.Live != nil {
		out.Liveness = &livenessJSON{State: in.Live.State.String(), Via: in.Live.Via.String(), Reason: in.Live.Reason.String()}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// headerJSON is d's JOSE header, sanitized.
func headerJSON(d *auth.Decoded) map[string]any {
	h := make(map[string]any, len(d.Header))
	for _, c := range d.Header {
		h[c.Name.String()] = sanitizeJSON(c.Value)
	}
	return h
}

// sanitizeJSON returns v with every string and object key passed through
// auth.Sanitize, so untrusted claims cannot carry terminal controls.
func sanitizeJSON(v any) any {
	switch x := v.(type) {
	case string:
		return text.Safe(x)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[text.Safe(k)] = sanitizeJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = sanitizeJSON(e)
		}
		return l
	default:
		return v
	}
}

// inspectVerify checks the token's signature: against the key set of
// --jwks, else against the keys of the realm that issued it (one of the
// store's connections).
func inspectVerify(ctx context.Context, opts *inspectOptions, token string) (auth.Verification, error) {
	client, err := opts.Auth()
	if err != nil {
		return auth.Verification{}, err
	}
	if opts.JWKS != "" {
		ks, err := loadKeySet(ctx, client, opts.JWKS)
		if err != nil {
			return auth.Verification{}, err
		}
		return client.VerifyWithKeySet(token, ks), nil
	}
	st, err := opts.Store()
	if err != nil {
		return auth.Verification{}, err
	}
	v := client.Verify(ctx, st.Connections(), token)
	if v.KeysUnavailable {
		v.Reason = text.Concat(v.Reason, text.Trusted("; to check it against a key set you have, pass --jwks FILE|URL"))
	}
	return v, nil
}

// loadKeySet reads the key set named by --jwks: an http(s) URL, else a file.
func loadKeySet(ctx context.Context, client *auth.Client, src string) (auth.KeySet, error) {
	if strings.HasPrefix(src, "https://") || strings.HasPrefix(src, "http://") {
		ks, err := client.FetchKeySet(ctx, src)
		if err != nil {
			return auth.KeySet{}, fmt.Errorf("--jwks: %w", err)
		}
		return ks, nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return auth.KeySet{}, text.Errorf("--jwks %s: %w", src, unwrapExecError(err))
	}
	ks, err := auth.ParseKeySet(data)
	if err != nil {
		return auth.KeySet{}, text.Errorf("--jwks %s: %w", src, err)
	}
	return ks, nil
}

// labelHint says, when the opaque "token" given is a key's label, how to
// inspect that key's token instead (a person types inspect prod for inspect
// --key prod).
func labelHint(opts *inspectOptions) {
	st, err := opts.Store()
	if err != nil {
		return
	}
	if _, err := st.Key(opts.Token); err == nil {
		q := text.ShellQuote(opts.Token)
		opts.IO.ErrText().Linef("shipkey: %s is also the label of a key; to inspect its token: shipkey inspect --key %s", q, q)
	}
}

// maxInspectInput bounds what inspect reads from stdin: a token response
// around a token of auth.MaxTokenSize, with room to spare.
const maxInspectInput = 4 * auth.MaxTokenSize

// tokenFromStdin finds the token in what was piped to inspect: the first
// line that is not blank ("Bearer " dropped), or, for a whole token
// response (JSON), its access_token. A token too large for auth.Decode is
// left for it to refuse in its own words.
func tokenFromStdin(in io.Reader) (string, error) {
	data, err := io.ReadAll(io.LimitReader(in, maxInspectInput+1))
	if err != nil {
		return "", fmt.Errorf("reading the token from stdin: %w", err)
	}
	if len(data) > maxInspectInput {
		return "", fmt.Errorf("stdin holds over %d KiB: more than a token or a token response", maxInspectInput>>10)
	}
	trimmed := strings.TrimSpace(string(data))
	if strings.HasPrefix(trimmed, "{") {
		var resp struct {
			AccessToken *string `json:"access_token"`
		}
		if json.Unmarshal([]byte(trimmed), &resp) != nil {
			return "", errors.New("stdin holds JSON that does not parse: give the token itself, or a whole token response")
		}
		if resp.AccessToken == nil || strings.TrimSpace(*resp.AccessToken) == "" {
			return "", errors.New("stdin holds JSON without an access_token: give the token itself, or a whole token response")
		}
		return strings.TrimSpace(*resp.AccessToken), nil
	}
	for line := range strings.Lines(trimmed) {
		if line = strings.TrimSpace(line); line != "" {
			return text.BearerToken(line), nil
		}
	}
	return "", usageErrorf("no token on stdin")
}
