package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/keys"
)

// DPoP proofs for other programs: token --dpop-proof METHOD URL (and header
// --dpop-proof) prints the key's token with a proof signed for one request,
// for a tool that sets its own headers; the token socket's POST /v1/proof
// answers the same (serve.go).

// proofFlags are --dpop-proof and --dpop-nonce of token and header.
type proofFlags struct {
	Method string // --dpop-proof METHOD (the URL is the last argument)
	URL    string
	Nonce  string // --dpop-nonce: the API's DPoP-Nonce
}

func (p *proofFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&p.Method, "dpop-proof", "", "METHOD URL: also print a DPoP proof for this request (the URL is the last argument; a path goes under the key's api_url)")
	cmd.Flags().StringVar(&p.Nonce, "dpop-nonce", "", "with --dpop-proof: the nonce the API asked for (its DPoP-Nonce header)")
}

// tokenArgs reads token's and header's arguments: [LABEL], or with
// --dpop-proof [LABEL] URL.
func tokenArgs(opts *tokenOptions) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if opts.Proof.Method == "" {
			if cmd.Flags().Changed("dpop-nonce") {
				return usageErrorf("--dpop-nonce goes with --dpop-proof METHOD URL (see: %s --help)", cmd.CommandPath())
			}
			return usageArgs(cobra.MaximumNArgs(1))(cmd, args)
		}
		if len(args) == 0 || len(args) > 2 {
			return usageErrorf("--dpop-proof METHOD URL: give the request's method and URL (and at most a key before the URL) (see: %s --help)", cmd.CommandPath())
		}
		opts.Proof.URL = args[len(args)-1]
		return nil
	}
}

// proofMethod checks an HTTP method for a proof's htm (upper-cased, as
// shipkey api sends it).
func proofMethod(m string) (string, error) {
	m = strings.ToUpper(strings.TrimSpace(m))
	if m == "" || strings.IndexFunc(m, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) }) >= 0 {
		return "", usageErrorf("--dpop-proof %s is not an HTTP method such as GET or POST", text.ShellQuote(m))
	}
	return m, nil
}

// proofTarget is the proof's URL: a full http(s) URL, or a path under the
// key's api_url.
func proofTarget(s string, key store.Key) (string, error) {
	if isAPIPath(s) {
		u, err := keyTarget(s, key)
		if err != nil {
			return "", err
		}
		return u.String(), nil
	}
	u, err := apiTarget(s, "")
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// noDPoPKeyError: a bearer key needs no proof.
func noDPoPKeyError(label string) error {
	return text.Errorf("API key %s has no DPoP key: its tokens are bearer tokens and need no proof (shipkey header, shipkey api); a key gets one with keys new --dpop", label)
}

// tokenProofRun is token (or header) --dpop-proof: the key's token and a
// proof signed for one request.
func tokenProofRun(ctx context.Context, opts *tokenOptions) error {
	method, err := proofMethod(opts.Proof.Method)
	if err != nil {
		return err
	}
	if opts.Output == outputExecCredential {
		return usageErrorf("--dpop-proof prints the token with a proof: use --output text or json")
	}
	if opts.Exchange.set() {
		return usageErrorf("--dpop-proof signs for the key's own token; for a token of another audience ask the token socket (POST /v1/proof?audience=…)")
	}
	st, err := opts.Store()
	if err != nil {
		return err
	}
	svc := newKeys(st, nil, opts.IO, opts.Secrets, opts.Now, nil)
	key, err := svc.MachineKey(opts.Label, "shipkey token --dpop-proof")
	if err != nil {
		return err
	}
	dpop, err := svc.DPoP(key)
	if err != nil {
		return err
	}
	if dpop == nil {
		return noDPoPKeyError(key.Label)
	}
	target, err := proofTarget(opts.Proof.URL, key)
	if err != nil {
		return err
	}
	via := "token --dpop-proof"
	if opts.Header {
		via = "header --dpop-proof"
	}
	ts, err := svc.KeyToken(ctx, key, keys.TokenOptions{Force: opts.ForceRefresh, MinValid: opts.MinValid, HandOut: handOut(audit.Proof, via)})
	if err != nil {
		return err
	}
	proof, err := dpop.Proof(method, target, ts.AccessToken, opts.Proof.Nonce, opts.Now())
	if err != nil {
		return err
	}
	return writeProof(opts.IO.Out, opts, key.Label, dpop.JKT(), ts, proof)
}

// writeProof prints the token and the proof: header prints the two request
// headers (as curl config lines with --curl-config); token --json adds
// dpop_proof to the token's JSON; token prints the token and the proof on
// two lines.
func writeProof(w io.Writer, opts *tokenOptions, label, jkt string, ts *auth.TokenSet, proof string) error {
	scheme := auth.DPoPTokenType
	if !strings.EqualFold(ts.TokenType, auth.DPoPTokenType) {
		scheme = "Bearer" // the server did not bind this token; the proof does no harm
	}
	authz, dpop := "Authorization: "+scheme+" "+ts.AccessToken, "DPoP: "+proof
	switch {
	case opts.Header && opts.CurlConfig:
		a, err := curlConfigLine(authz)
		if err != nil {
			return err
		}
		d, err := curlConfigLine(dpop)
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, a+d)
		return err
	case opts.Header:
		_, err := fmt.Fprintf(w, "%s\n%s\n", authz, dpop)
		return err
	case opts.Output == outputJSON:
		d := proofDoc{tokenDoc: newTokenDoc(label, ts), DPoPProof: proof}
		d.JKT = jkt
		return writeJSON(w, d)
	default:
		_, err := fmt.Fprintf(w, "%s\n%s\n", ts.AccessToken, proof)
		return err
	}
}

// proofDoc is token --json --dpop-proof's body and the socket's answer to
// POST /v1/proof: the token's JSON and the proof for the request.
type proofDoc struct {
	tokenDoc
	DPoPProof string `json:"dpop_proof"`
}
