package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"
	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/keys"
)

// apiOptions calls the API with a key's token, as gh api does.
type apiOptions struct {
	IO      *iostreams
	Getenv  func(string) string
	Now     func() time.Time
	Store   func() (*store.Store, error)
	Secrets *secretSet
	// Client builds the HTTP client that sends the key's token, signing a
	// DPoP proof per request with dpop when the key has one (the
	// factory's; tests may replace it).
	Client apiClientBuilder

	Label        string   // --key
	Target       string   // PATH or URL
	Method       string   // -X
	Headers      []string // -H "Name: value"
	AllowHosts   []string // --allow-host: other hosts the token may go to
	RawFields    []string // -f key=value (strings)
	TypedFields  []string // -F key=value (true, false, null, numbers, @file)
	Input        string   // --input FILE or -
	Include      bool     // -i
	JQ           string   // --jq
	Silent       bool     // --silent
	ForceRefresh bool     // --force-refresh
	Paginate     bool     // --paginate: follow the answers' next links
	PaginateNext string   // --paginate-next JQ: the next page from the body
	// MaxPages bounds --paginate (0: maxPages).
	MaxPages int
	// Exchange sends a token for another audience (--audience, …).
	Exchange exchangeFlags
}

func newCmdAPI(f *factory, runF func(context.Context, *apiOptions) error) *cobra.Command {
	opts := &apiOptions{IO: f.IO, Getenv: f.Getenv, Now: f.Now, Store: f.readingStore, Secrets: f.Secrets, Client: f.APIClient}
	cmd := &cobra.Command{
		Use:   "api [--key KEY | KEY] PATH|URL",
		Short: "Call the API with the key's token (like gh api)",
		Long: `Send an HTTP request with the key's access token and print the answer.

URL is a full https:// URL (http:// only to loopback); a PATH such as
/shipments?page=2 is resolved against the key's API base URL (api_url, set
with keys new or keys set --api-url). The token goes in the Authorization
header; it is renewed first when it is about to expire. A DPoP-bound token
(keys new --dpop) goes with the DPoP scheme and a proof signed for this
method and URL with the key's DPoP key; a server's DPoP-Nonce is honoured.
When the API answers 401 and its WWW-Authenticate says the token is invalid
(error="invalid_token", or a DPoP nonce is asked for), the token is renewed
once, forced, and the request sent once more; nothing else is ever retried.
A body read from standard input is sent with Expect: 100-continue, so that
it can still be sent whole after such a refusal.

The body: -f key=value adds a string field and -F key=value a typed one
(true, false, null and numbers as JSON; @FILE the file's text, @- standard
input's) to a JSON object; --input FILE (or - for standard input) sends the
file as it is, streamed. A body makes the method POST unless -X says
otherwise. Content-Type and Accept default to application/json (-H sets
them).

The answer's body goes to stdout as it arrives (through --jq EXPR when
given: the body is then read whole and each result printed, strings raw);
-i prints the status line and headers first; --silent prints no body. Text
printed to a terminal has its control characters made visible. With stdout
not a terminal and stderr one, a long download shows its progress on stderr.

Exit codes: 0 for a 2xx answer; 6 for a 5xx answer or no answer (the API
unreachable or too slow: retry later); 5 for a 401 that came again after the
token was renewed (the API refuses this key); 1 for any other status (the body
is still printed on stdout, the status line on stderr); 3 when only a new
login can help (shipkey login). The key: --key, or the
first of two arguments; else SHIPKEY_KEY, else the default key, else the
only key.`,
		Example: `  shipkey api https://api.example.com/v1/shipments
  shipkey api prod /shipments?status=late        # against prod's api_url
  shipkey api -X POST https://api.example.com/v1/shipments -f ref=A1 -F weight=2.5
  gzip -dc shipments.json.gz | shipkey api --input - https://api.example.com/v1/shipments/import
  shipkey api https://api.example.com/v1/shipments --jq '.[].id'
  shipkey api prod --paginate /shipments --jq '.[].id'     # every page
  shipkey api prod --paginate-next '{cursor: .next_cursor}' /events --jq '.items[]'`,
		Args: usageArgs(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Target = args[len(args)-1]
			if len(args) == 2 {
				if opts.Label != "" {
					return usageErrorf("the key twice: --key %s and %s; give one (see: %s --help)", text.ShellQuote(opts.Label), text.ShellQuote(args[0]), cmd.CommandPath())
				}
				opts.Label = args[0]
			}
			if opts.Input != "" && (len(opts.RawFields) > 0 || len(opts.TypedFields) > 0) {
				return usageErrorf("--input and -f/-F: give the body one way (see: %s --help)", cmd.CommandPath())
			}
			if opts.JQ != "" && opts.Silent {
				return usageErrorf("--jq and --silent: give one (see: %s --help)", cmd.CommandPath())
			}
			if opts.PaginateNext != "" {
				opts.Paginate = true
			}
			if err := opts.Exchange.check(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return apiRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Label, "key", "", "the API key whose token is sent")
	cmd.Flags().StringVarP(&opts.Method, "method", "X", "", "HTTP method (default GET, or POST with a body)")
	cmd.Flags().StringArrayVarP(&opts.Headers, "header", "H", nil, `add a request header "Name: value" (repeatable)`)
	cmd.Flags().StringArrayVar(&opts.AllowHosts, "allow-host", nil, "send the key's token to HOST (or HOST:PORT) too, not only to its api_url's (repeatable)")
	cmd.Flags().StringArrayVarP(&opts.RawFields, "raw-field", "f", nil, "add a string field key=value to the JSON body")
	cmd.Flags().StringArrayVarP(&opts.TypedFields, "field", "F", nil, "add a typed field key=value (true, false, null, numbers, @FILE) to the JSON body")
	cmd.Flags().StringVar(&opts.Input, "input", "", "send FILE (- for standard input) as the body, streamed")
	cmd.Flags().BoolVarP(&opts.Include, "include", "i", false, "print the status line and headers before the body")
	cmd.Flags().StringVarP(&opts.JQ, "jq", "q", "", "filter the JSON answer with a jq expression")
	cmd.Flags().BoolVar(&opts.Silent, "silent", false, "print no body")
	cmd.Flags().BoolVar(&opts.ForceRefresh, "force-refresh", false, "renew the token before sending, even when it looks valid")
	cmd.Flags().BoolVar(&opts.Paginate, "paginate", false, `fetch every page: follow the answers' Link: <URL>; rel="next" (GET only)`)
	cmd.Flags().StringVar(&opts.PaginateNext, "paginate-next", "", "with --paginate: the next page from each page's JSON body by a jq expression (a URL, a path, or an object of query parameters)")
	opts.Exchange.add(cmd.Flags(), true)
	cmd.Long += "\n\n" + paginateHelp + "\n\n" + exchangeFlagsHelp
	_ = cmd.RegisterFlagCompletionFunc("key", completeLabelFlag(f))
	return cmd
}

// APIClient is the HTTP client for calling an API with tokens from source:
// SHIPKEY_CA_FILE's roots, --timeout for the answer's headers, --debug's
// log, and a DPoP proof per request signed with dpop (the key's DPoP key,
// keyDPoP; nil for a key without one).
func (f *factory) APIClient(source auth.APISource, dpop *auth.DPoPKey) (*http.Client, error) {
	timeout, err := f.requestTimeout()
	if err != nil {
		return nil, err
	}
	return auth.NewAPIClient(auth.APIOptions{
		Source:        source,
		CAFile:        f.caFile(),
		HeaderTimeout: timeout,
		Logger:        f.Logger(),
		DPoP:          dpop,
		Now:           f.Now,
	})
}

func apiRun(ctx context.Context, opts *apiOptions) error {
	// A full URL is checked now; a path once the key (its api_url) is known.
	target, err := apiTarget(opts.Target, "")
	if err != nil && !isAPIPath(opts.Target) {
		return err
	}
	jq, nextJQ, err := compileFilters(opts)
	if err != nil {
		return err
	}
	body, err := apiBody(opts)
	if err != nil {
		return err
	}
	method, err := apiMethod(opts, body.present())
	if err != nil {
		return err
	}
	st, err := opts.Store()
	if err != nil {
		return err
	}
	svc := newKeys(st, nil, opts.IO, opts.Secrets, opts.Now, opts.Client)
	key, err := svc.MachineKey(opts.Label, "shipkey api")
	if err != nil {
		return err
	}
	if target, err = targetOf(target, opts.Target, key); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, target.String(), body.reader)
	if err != nil {
		return usageErrorf("%s %s: %v", method, opts.Target, err)
	}
	req.GetBody, req.ContentLength = body.getBody, body.length
	if err := setAPIHeaders(req.Header, opts.Headers, body.present()); err != nil {
		return err
	}

	renewed := false
	client, err := svc.Client(key, keys.ClientOptions{Exchange: opts.Exchange.exchange(), ForceFirst: opts.ForceRefresh, HandOut: handOut(audit.Header, "api"),
		AllowHosts: opts.AllowHosts, Renewed: func() { renewed = true }})
	if err != nil {
		return err
	}
	if opts.Paginate {
		return paginate(opts, client, req, jq, nextJQ, func() bool { return renewed })
	}
	resp, err := client.Do(req)
	if err != nil {
		return apiError(method, target, err)
	}
	defer resp.Body.Close()
	if err := writeAnswer(opts, resp, jq); err != nil {
		return err
	}
	return answerStatus(resp, renewed)
}

// compileFilters compiles --jq and --paginate-next (nil when not given).
func compileFilters(opts *apiOptions) (jq, nextJQ *gojq.Code, err error) {
	if jq, err = compileJQ("--jq", opts.JQ); err != nil {
		return nil, nil, err
	}
	if nextJQ, err = compileJQ("--paginate-next", opts.PaginateNext); err != nil {
		return nil, nil, err
	}
	return jq, nextJQ, nil
}

// targetOf is target, the full URL given, else path against key's
// api_url.
func targetOf(target *url.URL, path string, key store.Key) (*url.URL, error) {
	if target != nil {
		return target, nil
	}
	return keyTarget(path, key)
}

// apiMethod is -X, else GET, or POST with a body; --paginate takes GET
// only.
func apiMethod(opts *apiOptions, withBody bool) (string, error) {
	method := strings.ToUpper(opts.Method)
	if method == "" {
		method = http.MethodGet
		if withBody {
			method = http.MethodPost
		}
	}
	if opts.Paginate && method != http.MethodGet {
		return "", usageErrorf("--paginate follows next links with GET; %s %s is sent once: leave out --paginate (or the body and -X)", method, opts.Target)
	}
	return method, nil
}

// setAPIHeaders sets the JSON headers (Content-Type with a body) and then
// the -H headers, which may not be the authorization.
func setAPIHeaders(h http.Header, headers []string, withBody bool) error {
	h.Set("Accept", "application/json")
	if withBody {
		h.Set("Content-Type", "application/json")
	}
	for _, line := range headers {
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") {
			return usageErrorf("-H %s is not a header; write \"Name: value\"", text.ShellQuote(line))
		}
		if strings.EqualFold(name, "Authorization") {
			return usageErrorf("-H Authorization: the key's token is the authorization; use shipkey curl for another")
		}
		h.Set(name, strings.TrimSpace(value))
	}
	return nil
}

// answerStatus is the exit for the answer's status, as token's codes go:
// 6 for a 5xx (the API's trouble: retry later), 5 for a 401 that came again
// after the token was renewed (the API refuses this key's credentials), 1
// for any other that is not 2xx.
func answerStatus(resp *http.Response, renewed bool) error {
	code := resp.StatusCode
	if code >= 200 && code <= 299 {
		return nil
	}
	exit := exitFailure
	switch {
	case code >= 500:
		exit = exitUnreachable
	case code == http.StatusUnauthorized && renewed:
		exit = exitCredentialsRefused
	}
	return &exitError{code: exit, err: text.Errorf("HTTP %s", resp.Status)}
}

// apiClientBuilder builds the HTTP client that sends tokens from source,
// signing a DPoP proof per request with dpop when it is not nil (the
// factory's APIClient).
type apiClientBuilder = keys.ClientBuilder

// apiTarget is the request's URL: s when it is a full http(s) URL, else s
// as a path (with its query) under base, the key's api_url ("" for none).
func apiTarget(s, base string) (*url.URL, error) {
	if isAPIPath(s) && base != "" {
		s = strings.TrimRight(base, "/") + "/" + strings.TrimLeft(s, "/")
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, usageErrorf("%s is not a full URL; give one such as https://api.example.com/v1/shipments", text.ShellQuote(s))
	}
	return u, nil
}

// isAPIPath reports whether s is a path for the key's api_url (no scheme,
// no host), as opposed to a full URL.
func isAPIPath(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "" && u.Host == "" && u.Path != "" && !strings.HasPrefix(s, "//")
}

// keyTarget is path resolved against the key's api_url; one line when the
// key has none (or a damaged one, edited by hand).
func keyTarget(path string, key store.Key) (*url.URL, error) {
	if key.APIURL == "" {
		return nil, usageErrorf("%s is a path and API key %s has no api_url; give a full URL, or set the API's base URL: shipkey keys set %s --api-url https://api.example.com",
			text.ShellQuote(path), key.Label, text.ShellQuote(key.Label))
	}
	base, err := store.CheckAPIURL(key.APIURL)
	if err != nil {
		return nil, text.Errorf("API key %s: api_url %v; fix it: shipkey keys set %s --api-url URL", key.Label, err, text.ShellQuote(key.Label))
	}
	return apiTarget(path, base)
}

// apiError is the one line for a request that got no answer: the token
// source's own error when it failed (login needed: exit 3), else what the
// network said.
func apiError(method string, target *url.URL, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var hre *keys.HostRefusedError
	if errors.As(err, &hre) {
		return usageErrorf("%s", hre.Error())
	}
	var lne *store.LoginNeededError
	if errors.As(err, &lne) || errors.Is(err, store.ErrLoginNeeded) || auth.KindOf(err) != auth.KindUnknown {
		return err
	}
	where := target.Scheme + "://" + target.Host + target.Path
	line := text.Errorf("%s %s: no answer: %v", method, where, err)
	var cve *tls.CertificateVerificationError
	if errors.As(err, &cve) {
		return line // a certificate to trust (--ca-file), not a server to wait for
	}
	return &exitError{code: exitUnreachable, err: line}
}

// requestBody is what a request sends.
type requestBody struct {
	reader  io.Reader
	getBody func() (io.ReadCloser, error) // nil: not repeatable (a stream)
	length  int64                         // -1 unknown, 0 none
}

func (b requestBody) present() bool { return b.reader != nil }

// apiBody builds the request body from -f/-F or --input.
func apiBody(opts *apiOptions) (requestBody, error) {
	switch {
	case opts.Input == "-":
		return stdinBody(opts.IO.In), nil
	case opts.Input != "":
		return inputFileBody(opts.Input)
	case len(opts.RawFields)+len(opts.TypedFields) > 0:
		return fieldsBody(opts.RawFields, opts.TypedFields, opts.IO.In)
	}
	return requestBody{}, nil
}

// stdinBody is --input -: a regular file on stdin is sent as a file (again
// when asked), anything else as a stream.
func stdinBody(in io.Reader) requestBody {
	if f, ok := in.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return fileBody(f, fi.Size())
		}
	}
	return requestBody{reader: io.NopCloser(in), length: -1}
}

// inputFileBody is --input FILE: a regular file, or a stream (a pipe).
func inputFileBody(path string) (requestBody, error) {
	f, err := os.Open(path)
	if err != nil {
		return requestBody{}, fmt.Errorf("--input: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		return requestBody{}, err
	}
	if !fi.Mode().IsRegular() {
		return requestBody{reader: f, length: -1}, nil
	}
	return fileBody(f, fi.Size()), nil
}

// fieldsBody is a JSON object of the -f fields (strings) and the -F ones
// (typed: typedField, which may read stdin).
func fieldsBody(raw, typed []string, stdin io.Reader) (requestBody, error) {
	obj := map[string]any{}
	for _, kv := range raw {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return requestBody{}, usageErrorf("-f %s is not key=value", text.ShellQuote(kv))
		}
		obj[k] = v
	}
	for _, kv := range typed {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return requestBody{}, usageErrorf("-F %s is not key=value", text.ShellQuote(kv))
		}
		val, err := typedField(stdin, v)
		if err != nil {
			return requestBody{}, err
		}
		obj[k] = val
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return requestBody{}, err
	}
	return requestBody{
		reader:  bytes.NewReader(data),
		getBody: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		length:  int64(len(data)),
	}, nil
}

// fileBody sends a regular file, sent again from its start when asked.
func fileBody(f *os.File, size int64) requestBody {
	return requestBody{
		reader: io.NopCloser(f),
		getBody: func() (io.ReadCloser, error) {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return nil, err
			}
			return io.NopCloser(f), nil
		},
		length: size,
	}
}

// typedField is -F's value: true, false, null, a number, @FILE's text, or
// the string itself.
func typedField(stdin io.Reader, v string) (any, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, nil
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && !strings.ContainsAny(v, "xXnN") {
		return n, nil
	}
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var data []byte
		var err error
		if name == "-" {
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, fmt.Errorf("-F %s: %w", text.ShellQuote(v), err)
		}
		return string(data), nil
	}
	return v, nil
}

// compileJQ compiles the jq expression of flag (nil for none).
func compileJQ(flag, expr string) (*gojq.Code, error) {
	if expr == "" {
		return nil, nil
	}
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, usageErrorf("%s %s: %v", flag, text.ShellQuote(expr), err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, usageErrorf("%s %s: %v", flag, text.ShellQuote(expr), err)
	}
	return code, nil
}

// writeAnswer prints the answer: status line and headers with -i, the body
// (through jq when asked); a status other than 2xx is the error line.
func writeAnswer(opts *apiOptions, resp *http.Response, jq *gojq.Code) error {
	out, flush := answerOut(opts)
	if opts.Include {
		writeHead(out, resp)
	}
	var err error
	switch {
	case opts.Silent:
		_, err = io.Copy(io.Discard, resp.Body)
	case jq != nil && isJSON(resp.Header.Get("Content-Type")):
		err = runJQ(out, resp.Body, jq)
	default:
		var src io.Reader = resp.Body
		if !opts.IO.StdoutTTY && opts.IO.StderrTTY {
			p := startProgress(opts.IO.ErrOut, resp.ContentLength)
			defer p.stop()
			src = io.TeeReader(resp.Body, p)
		}
		_, err = io.Copy(out, src)
	}
	if ferr := flush(); err == nil {
		err = ferr
	}
	return answerReadError(err)
}

// answerOut is where the answer goes: stdout, its control characters made
// visible on a terminal; flush writes what is held back.
func answerOut(opts *apiOptions) (io.Writer, func() error) {
	if !opts.IO.StdoutTTY {
		return opts.IO.Out, func() error { return nil }
	}
	safe := text.NewSafeWriter(opts.IO.Out)
	return safe, safe.Flush
}

// writeHead prints the status line and the headers (-i).
func writeHead(out io.Writer, resp *http.Response) {
	fmt.Fprintf(out, "%s %s\n", resp.Proto, resp.Status)
	names := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range resp.Header[k] {
			fmt.Fprintf(out, "%s: %s\n", k, v)
		}
	}
	fmt.Fprintln(out)
}

// answerReadError is the line for a failure to read or print the answer
// (a --jq failure says itself).
func answerReadError(err error) error {
	if err == nil {
		return nil
	}
	var jqErr *jqError
	if errors.As(err, &jqErr) {
		return err
	}
	return fmt.Errorf("reading the answer: %v", err)
}

func isJSON(ct string) bool {
	ct = strings.ToLower(ct)
	return strings.Contains(ct, "json") || ct == ""
}

// jqError is a failure of the --jq expression on the answer (or of
// another flag's jq expression: flag names it).
type jqError struct {
	err  error
	flag string // "" for --jq
}

func (e *jqError) Error() string { return cmp.Or(e.flag, "--jq") + ": " + e.err.Error() }

// maxJQBody bounds the body --jq reads whole.
const maxJQBody = 256 << 20

func runJQ(w io.Writer, body io.Reader, code *gojq.Code) error {
	v, err := decodeAnswer(io.LimitReader(body, maxJQBody))
	if err != nil {
		return err
	}
	return printJQ(w, v, code)
}

// decodeAnswer reads a JSON answer for jq.
func decodeAnswer(body io.Reader) (any, error) {
	dec := json.NewDecoder(body)
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &jqError{err: fmt.Errorf("the answer is not JSON: %v", err)}
	}
	return normalizeNumbers(v), nil
}

// printJQ prints the results of code run on v, one a line, strings raw.
func printJQ(w io.Writer, v any, code *gojq.Code) error {
	iter := code.Run(v)
	for {
		r, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, ok := r.(error); ok {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				return nil
			}
			return &jqError{err: err}
		}
		if s, ok := r.(string); ok {
			if _, err := fmt.Fprintln(w, s); err != nil {
				return err
			}
			continue
		}
		b, err := gojq.Marshal(r)
		if err != nil {
			return &jqError{err: err}
		}
		if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
			return err
		}
	}
}

// normalizeNumbers turns json.Numbers into what gojq takes: ints when they
// fit, float64 otherwise.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil && n >= -(1<<53) && n <= 1<<53 {
			return int(n)
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
	}
	return v
}
