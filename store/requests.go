package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/shipkey/shipkey/internal/text"
)

// The Request screen's history: the requests sent from the app and those
// saved under a name, per key, in one JSON file of the state directory
// (requests.json, 0600, replaced atomically). Nothing that carries a
// credential is kept: CleanRequest drops it first.

// RequestsFile is the history's file name in the state directory.
const RequestsFile = "requests.json"

// The history's bounds.
const (
	// MaxRequestHistory is how many sent requests are kept per key (the
	// newest).
	MaxRequestHistory = 50
	// MaxSavedRequests is how many named requests are kept per key.
	MaxSavedRequests = 50
	// MaxRequestBody is the largest body kept; a larger one is left out.
	MaxRequestBody = 16 << 10
	// maxRequestKeys is how many keys have a history (the most recently
	// used): a store whose keys come and go does not grow the file forever.
	maxRequestKeys = 200
	// maxRequestsFile bounds what is read of the file.
	maxRequestsFile = 64 << 20
)

// Request is a request of the app's Request screen as its history keeps
// it: what was typed, with every credential left out.
type Request struct {
	// Name is a saved request's name ("" in the history).
	Name     string `json:"name,omitempty"`
	Method   string `json:"method"`
	URL      string `json:"url"` // as typed: a full URL or a path under the key's API URL
	Audience string `json:"audience,omitempty"`
	// Headers are "Name: value", as typed, without the credentials.
	Headers []string `json:"headers,omitempty"`
	Body    string   `json:"body,omitempty"`
	// LeftOut says what was not kept, to be said when it is recalled.
	LeftOut []string  `json:"left_out,omitempty"`
	At      time.Time `json:"at"`
}

// Same reports whether r and o are the same request (name, time and what
// was left out aside).
func (r Request) Same(o Request) bool {
	return r.Method == o.Method && r.URL == o.URL && r.Audience == o.Audience &&
		slices.Equal(r.Headers, o.Headers) && r.Body == o.Body
}

// KeyRequests are one key's history (newest first) and saved requests (by
// name).
type KeyRequests struct {
	History []Request `json:"history,omitempty"`
	Saved   []Request `json:"saved,omitempty"`
	Used    time.Time `json:"used"` // the last change: the file keeps the most recent keys
}

// requestsDoc is the file.
type requestsDoc struct {
	Version int                     `json:"version"`
	Keys    map[string]*KeyRequests `json:"keys"`
}

// ErrRequestsDamaged is the cause of the error Requests returns when the
// file could not be read as a history: it was moved aside, and the history
// starts again empty.
var ErrRequestsDamaged = errors.New("request history damaged")

// RequestHistory is the Request screen's history file of a store.
type RequestHistory struct {
	path string
	now  func() time.Time
	// limit bounds what is read of the file (0: maxRequestsFile; tests).
	limit int64
}

// NewRequestHistory is the history kept in the file at path (tests; a
// Store's is Store.Requests).
func NewRequestHistory(path string, now func() time.Time) *RequestHistory {
	if now == nil {
		now = time.Now
	}
	return &RequestHistory{path: path, now: now}
}

// Requests is the store's Request screen history, in its state directory.
func (s *Store) Requests() *RequestHistory {
	return NewRequestHistory(filepath.Join(s.stateDir, RequestsFile), s.now)
}

// Load reads every key's requests. A damaged file is moved aside (next to
// it, with its time in the name) and an error wrapping ErrRequestsDamaged
// says so and where it went; the requests are then empty, never nil.
func (h *RequestHistory) Load() (map[string]*KeyRequests, error) {
	doc, err := h.read()
	return doc.Keys, err
}

// Record adds r, cleaned, as label's newest sent request (a request the
// same as the newest is not kept twice) and returns label's requests.
func (h *RequestHistory) Record(label string, r Request) (*KeyRequests, error) {
	return h.change(label, func(k *KeyRequests) {
		r = CleanRequest(r)
		r.Name, r.At = "", h.now()
		k.History = slices.DeleteFunc(k.History, r.Same)
		k.History = append([]Request{r}, k.History...)
		if len(k.History) > MaxRequestHistory {
			k.History = k.History[:MaxRequestHistory]
		}
	})
}

// Save keeps r, cleaned, under r.Name among label's saved requests (one of
// that name is replaced) and returns label's requests.
func (h *RequestHistory) Save(label string, r Request) (*KeyRequests, error) {
	r.Name = strings.TrimSpace(r.Name)
	if r.Name == "" || text.Safe(r.Name) != r.Name {
		return nil, errors.New("a saved request needs a name of one line")
	}
	return h.change(label, func(k *KeyRequests) {
		r = CleanRequest(r)
		r.At = h.now()
		k.Saved = slices.DeleteFunc(k.Saved, func(o Request) bool { return o.Name == r.Name })
		k.Saved = append([]Request{r}, k.Saved...)
		if len(k.Saved) > MaxSavedRequests {
			k.Saved = k.Saved[:MaxSavedRequests]
		}
	})
}

// Forget removes q from label's requests: the saved request of q's name,
// or with no name the history entry sent at q.At that is q; it returns
// label's requests.
func (h *RequestHistory) Forget(label string, q Request) (*KeyRequests, error) {
	return h.change(label, func(k *KeyRequests) {
		if q.Name != "" {
			k.Saved = slices.DeleteFunc(k.Saved, func(o Request) bool { return o.Name == q.Name })
			return
		}
		k.History = slices.DeleteFunc(k.History, func(o Request) bool { return o.At.Equal(q.At) && o.Same(q) })
	})
}

// rename moves label's requests to newLabel, best effort: a file that
// cannot be read is left as it is (the app says so when it reads it).
func (h *RequestHistory) rename(label, newLabel string) {
	if _, err := os.Stat(h.path); err != nil {
		return // no history: nothing to move, no lock file to make
	}
	ctx, cancel := lockContext(context.Background())
	defer cancel()
	lock, err := acquireLock(ctx, h.path+".lock")
	if err != nil {
		return
	}
	defer lock.release()
	doc, err := h.readAside(false)
	if err != nil || doc.Keys[label] == nil {
		return
	}
	doc.Keys[newLabel], doc.Keys[label] = doc.Keys[label], nil
	delete(doc.Keys, label)
	if data, err := json.MarshalIndent(doc, "", "  "); err == nil {
		_ = writeFileAtomic(h.path, append(data, '\n'))
	}
}

// change applies fn to label's requests under the history's lock and
// writes the file again.
func (h *RequestHistory) change(label string, fn func(*KeyRequests)) (*KeyRequests, error) {
	ctx, cancel := lockContext(context.Background())
	defer cancel()
	lock, err := acquireLock(ctx, h.path+".lock")
	if err != nil {
		return nil, err
	}
	defer lock.release()
	doc, readErr := h.read()
	if readErr != nil {
		if _, err := os.Lstat(h.path); err == nil {
			// Not read, and not moved aside (too large, unreadable): a
			// write would replace every key's requests with this one.
			return nil, fmt.Errorf("%w; nothing was written over it", readErr)
		}
	}
	k := doc.Keys[label]
	if k == nil {
		k = &KeyRequests{}
		doc.Keys[label] = k
	}
	fn(k)
	k.Used = h.now()
	if len(doc.Keys) > maxRequestKeys {
		labels := make([]string, 0, len(doc.Keys))
		for l := range doc.Keys {
			labels = append(labels, l)
		}
		slices.SortFunc(labels, func(a, b string) int { return doc.Keys[b].Used.Compare(doc.Keys[a].Used) })
		for _, l := range labels[maxRequestKeys:] {
			delete(doc.Keys, l)
		}
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(h.path, append(data, '\n')); err != nil {
		return nil, err
	}
	out := *k
	return &out, readErr
}

// read reads the file: empty when there is none; a damaged one is moved
// aside (the error says where).
func (h *RequestHistory) read() (requestsDoc, error) { return h.readAside(true) }

// readAside is read; a damaged file is moved aside only when aside.
func (h *RequestHistory) readAside(aside bool) (requestsDoc, error) {
	doc := requestsDoc{Version: 1, Keys: map[string]*KeyRequests{}}
	f, err := os.Open(h.path)
	if errors.Is(err, os.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return doc, fileError("read", h.path, err)
	}
	data, err := readLimited(f, cmp.Or(h.limit, maxRequestsFile))
	f.Close()
	if err != nil {
		return doc, fileError("read", h.path, err)
	}
	var got requestsDoc
	why := ""
	switch err := json.Unmarshal(data, &got); {
	case err != nil:
		why = fmt.Sprintf("not JSON (line %d: %s)", jsonErrorLine(data, err), jsonErrorText(err))
	case got.Version != 1:
		why = fmt.Sprintf("version %d, not 1", got.Version)
	}
	if why == "" {
		for l, k := range got.Keys {
			if k == nil {
				delete(got.Keys, l)
			}
		}
		if got.Keys == nil {
			got.Keys = map[string]*KeyRequests{}
		}
		return got, nil
	}
	if !aside {
		return doc, fmt.Errorf("%w: %s is %s", ErrRequestsDamaged, displayPath(h.path), why)
	}
	to := fmt.Sprintf("%s.damaged-%s", h.path, h.now().UTC().Format("20060102T150405Z"))
	if err := os.Rename(h.path, to); err != nil {
		return doc, fmt.Errorf("%w: %s is %s, and could not be moved aside (%v): move or remove it", ErrRequestsDamaged, displayPath(h.path), why, err)
	}
	return doc, fmt.Errorf("%w: %s was %s; moved aside to %s, the history starts again", ErrRequestsDamaged, displayPath(h.path), why, displayPath(to))
}

// readLimited reads at most limit bytes of f; more is an error.
func readLimited(f *os.File, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		return nil, fmt.Errorf("more than %s, more than a history holds", text.Bytes(limit))
	}
	return data, err
}

// credentialName matches the names of headers, query parameters and body
// fields that carry a credential.
var credentialName = regexp.MustCompile(`(?i)auth|cookie|dpop|token|secret|key|passw|credential|session|signature`)

// looksLikeToken matches text holding a JWT (three base64url parts, the
// first a JSON object) or an authorization scheme with its credentials.
var looksLikeToken = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+\.|(?i)\b(bearer|basic|dpop|digest|negotiate)\s+[A-Za-z0-9._~+/=-]{8,}`)

// IsCredentialHeader reports whether a header of that name carries a
// credential (Authorization, Cookie, DPoP, X-Api-Key, …), or its value
// looks like a token: such a header is never kept nor copied.
func IsCredentialHeader(name, value string) bool {
	return credentialName.MatchString(name) || looksLikeToken.MatchString(value)
}

// CleanRequest is r without what carries a credential, with LeftOut saying
// what went: headers that carry one (IsCredentialHeader), a URL's user
// and password, query parameters named like one or whose value looks like a
// token, and a body over MaxRequestBody or that holds a field named like a
// credential or a token.
func CleanRequest(r Request) Request {
	out := r
	out.Headers, out.LeftOut = nil, slices.Clone(r.LeftOut)
	leave := func(what string) {
		if !slices.Contains(out.LeftOut, what) {
			out.LeftOut = append(out.LeftOut, what)
		}
	}
	for _, h := range r.Headers {
		name, value, _ := strings.Cut(h, ":")
		if IsCredentialHeader(strings.TrimSpace(name), value) {
			leave("the " + text.Safe(strings.TrimSpace(name)) + " header")
			continue
		}
		out.Headers = append(out.Headers, h)
	}
	var why string
	out.URL, why = cleanURL(r.URL)
	if why != "" {
		leave(why)
	}
	switch {
	case len(r.Body) > MaxRequestBody:
		out.Body = ""
		leave(fmt.Sprintf("the body (%s, over %s)", text.Bytes(int64(len(r.Body))), text.Bytes(MaxRequestBody)))
	case bodyHoldsCredential(r.Body):
		out.Body = ""
		leave("the body (it holds a credential-like field)")
	}
	if looksLikeToken.MatchString(out.Audience) {
		out.Audience = ""
		leave("the audience")
	}
	return out
}

// cleanURL is u without its user information and the query parameters
// that carry a credential; why says what went.
func cleanURL(u string) (string, string) {
	p, err := url.Parse(u)
	if err != nil {
		if looksLikeToken.MatchString(u) {
			return "", "the URL"
		}
		return u, ""
	}
	var gone []string
	if p.User != nil {
		p.User = nil
		gone = append(gone, "the URL's user information")
	}
	gone = append(gone, cleanQuery(p)...)
	if looksLikeToken.MatchString(p.Path) || looksLikeToken.MatchString(p.Fragment) {
		return "", "the URL"
	}
	if len(gone) == 0 {
		return u, ""
	}
	return p.String(), strings.Join(gone, ", ")
}

// cleanQuery removes from p's query the parameters that carry a
// credential (all of it when it does not parse and looks like a token) and
// says what went.
func cleanQuery(p *url.URL) []string {
	if p.RawQuery == "" {
		return nil
	}
	q, err := url.ParseQuery(p.RawQuery)
	if err != nil && looksLikeToken.MatchString(p.RawQuery) {
		p.RawQuery = ""
		return []string{"the URL's query"}
	}
	if !queryHoldsCredential(q) {
		return nil
	}
	var kept, gone []string
	for _, part := range strings.Split(p.RawQuery, "&") {
		n, v, _ := strings.Cut(part, "=")
		name, _ := url.QueryUnescape(n)
		val, _ := url.QueryUnescape(v)
		if isCredentialParam(name, val) {
			gone = append(gone, "the query parameter "+text.Safe(name))
			continue
		}
		kept = append(kept, part)
	}
	p.RawQuery = strings.Join(kept, "&")
	return gone
}

// queryHoldsCredential reports whether a parameter of q carries a
// credential.
func queryHoldsCredential(q url.Values) bool {
	for name, vs := range q {
		for _, v := range vs {
			if isCredentialParam(name, v) {
				return true
			}
		}
	}
	return false
}

// isCredentialParam reports whether a query parameter is named like a
// credential or its value looks like a token.
func isCredentialParam(name, value string) bool {
	return credentialName.MatchString(name) || looksLikeToken.MatchString(value)
}

// bodyHoldsCredential reports whether a body holds a token, or a field
// named like a credential: a JSON object's member (at any depth) or a form
// field.
func bodyHoldsCredential(body string) bool {
	if body == "" {
		return false
	}
	if looksLikeToken.MatchString(body) {
		return true
	}
	var v any
	if json.Unmarshal([]byte(body), &v) == nil {
		return jsonHoldsCredential(v)
	}
	if q, err := url.ParseQuery(strings.TrimSpace(body)); err == nil && !strings.ContainsAny(body, " \n{") {
		for name := range q {
			if credentialName.MatchString(name) {
				return true
			}
		}
	}
	return false
}

func jsonHoldsCredential(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for name, x := range v {
			if credentialName.MatchString(name) || jsonHoldsCredential(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if jsonHoldsCredential(x) {
				return true
			}
		}
	}
	return false
}
