package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store/keys"
)

// paginateHelp is api's help on --paginate.
const paginateHelp = `Pages (as gh api --paginate): --paginate sends the request again for each
next page until the API names none: the one in the answer's
Link: <URL>; rel="next" header, or, with --paginate-next JQ, what JQ makes
of each page's JSON body: a URL or a path (resolved against the page's URL;
null or "" for none), or an object of query parameters to set on the page's
URL, such as '{cursor: .next_cursor}' (all null for none). Only GET pages.
Every page goes to the origin (scheme, host, port) of the first: a next
link to another is refused and the pages stop there, as they do at a link
back to a page already fetched and after 10000 pages (exit 1). JSON arrays
of the pages are printed as one array; other bodies one after another;
--jq runs on each page, its results one stream; -i prints each page's
status and headers before it. A page that is not 2xx is printed and ends
the pages with its exit code.`

// maxPages bounds --paginate: an API whose cursors never end (or go round
// a loop longer than the pages kept) is not followed forever.
const maxPages = 10000

// paginate sends req and the requests for its next pages, printing each
// answer (pages).
func paginate(opts *apiOptions, client *http.Client, req *http.Request, jq, nextJQ *gojq.Code, renewed func() bool) error {
	out, flush := answerOut(opts)
	w := &pageWriter{out: out, merge: jq == nil && !opts.Include && !opts.Silent}
	err := fetchPages(opts, client, req, w, jq, nextJQ, renewed)
	if werr := w.end(); err == nil {
		err = answerReadError(werr)
	}
	if ferr := flush(); err == nil {
		err = answerReadError(ferr)
	}
	return err
}

func fetchPages(opts *apiOptions, client *http.Client, req *http.Request, w *pageWriter, jq, nextJQ *gojq.Code, renewed func() bool) error {
	trail := newPageTrail(req.URL, opts.MaxPages)
	for n := 1; ; n++ {
		resp, body, err := readPage(client, req, n)
		if err != nil {
			return err
		}
		isJSONPage := isJSON(resp.Header.Get("Content-Type"))
		var v any
		if isJSONPage && (jq != nil || nextJQ != nil) && resp.StatusCode/100 == 2 {
			if v, err = decodeAnswer(bytes.NewReader(body)); err != nil {
				return fmt.Errorf("page %d: %w", n, err)
			}
		}
		if err := writePage(opts, w, resp, body, v, jq, isJSONPage); err != nil {
			return answerReadError(err)
		}
		if err := answerStatus(resp, renewed()); err != nil {
			return err
		}
		next, err := nextPage(resp, v, nextJQ, n, isJSONPage)
		if err != nil || next == nil {
			return err
		}
		if err := trail.follow(next, n); err != nil {
			return err
		}
		req = req.Clone(req.Context())
		req.URL, req.Host = next, ""
	}
}

// readPage fetches page n whole, up to maxJQBody.
func readPage(client *http.Client, req *http.Request, n int) (*http.Response, []byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, apiError(req.Method, req.URL, err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJQBody+1))
	resp.Body.Close()
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("reading page %d: %v", n, err)
	case len(body) > maxJQBody:
		return nil, nil, fmt.Errorf("page %d is larger than %d MiB: --paginate reads each page whole; ask for smaller pages", n, maxJQBody>>20)
	}
	return resp, body, nil
}

// writePage writes one page as the flags ask: its head with --include,
// nothing with --silent, the jq filter's output on its JSON (v), else
// the body through w.
func writePage(opts *apiOptions, w *pageWriter, resp *http.Response, body []byte, v any, jq *gojq.Code, isJSONPage bool) error {
	if opts.Include {
		writeHead(w.out, resp)
	}
	switch {
	case opts.Silent:
		return nil
	case v != nil && jq != nil:
		return printJQ(w.out, v, jq)
	default:
		return w.page(body, isJSONPage)
	}
}

// pageTrail is where --paginate has been: the pages' origin, the pages
// seen (by pageKey, with their number) and how many it may follow.
type pageTrail struct {
	home  string
	seen  map[string]int
	limit int
}

func newPageTrail(first *url.URL, maxPagesFlag int) *pageTrail {
	limit := maxPagesFlag
	if limit <= 0 {
		limit = maxPages
	}
	return &pageTrail{home: keys.Origin(first), seen: map[string]int{pageKey(first): 1}, limit: limit}
}

// follow refuses page n's next link when it leaves the pages' origin,
// leads back to a page seen or goes past the limit; else it records it.
func (t *pageTrail) follow(next *url.URL, n int) error {
	if o := keys.Origin(next); o != t.home {
		return text.Errorf("page %d's next link goes to %s, not to %s where the pages come from: not followed (the key's token goes to its API only)",
			n, o, t.home)
	}
	if m, ok := t.seen[pageKey(next)]; ok {
		return fmt.Errorf("page %d's next link leads back to page %d: stopped (the API's next links go round in a loop)", n, m)
	}
	if n >= t.limit {
		return fmt.Errorf("stopped after %d pages: the API still names a next page; narrow the request (a filter, or larger pages)", n)
	}
	t.seen[pageKey(next)] = n + 1
	return nil
}

// pageKey is u as --paginate knows a page again: its query parameters in
// one order, no fragment.
func pageKey(u *url.URL) string {
	k := *u
	k.RawQuery, k.Fragment, k.RawFragment = u.Query().Encode(), "", ""
	return k.String()
}

// nextPage is the URL of the page after page n (resp, v its JSON body when
// decoded), or nil: by nextJQ on the body when given, else by the Link
// header's rel="next".
func nextPage(resp *http.Response, v any, nextJQ *gojq.Code, n int, isJSONPage bool) (*url.URL, error) {
	base := resp.Request.URL
	if nextJQ == nil {
		link := auth.NextLink(resp.Header)
		if link == "" {
			return nil, nil
		}
		return resolveNext(base, link, n)
	}
	if !isJSONPage {
		return nil, text.Errorf("page %d is not JSON (%s): --paginate-next reads the next page from a JSON body", n, resp.Header.Get("Content-Type"))
	}
	r, ok := nextJQ.Run(v).Next()
	if !ok {
		return nil, nil
	}
	switch x := r.(type) {
	case error:
		return nil, &jqError{err: fmt.Errorf("on page %d: %v", n, x), flag: "--paginate-next"}
	case nil:
		return nil, nil
	case bool:
		if !x {
			return nil, nil
		}
	case string:
		if x == "" {
			return nil, nil
		}
		return resolveNext(base, x, n)
	case map[string]any:
		return withQuery(base, x, n)
	}
	b, _ := gojq.Marshal(r)
	return nil, text.Errorf("--paginate-next gave %s on page %d; give a URL, a path, or an object of query parameters", string(b), n)
}

// resolveNext is ref, a next link of page n, resolved against the page's
// URL; an http(s) URL.
func resolveNext(base *url.URL, ref string, n int) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(ref))
	if err == nil {
		u = base.ResolveReference(u)
	}
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, text.Errorf("page %d's next link %s is not an http(s) URL: not followed", n, ref)
	}
	return u, nil
}

// withQuery is base with the query parameters of params set (strings,
// numbers and booleans; null drops one); nil when every value is null (no
// next page).
func withQuery(base *url.URL, params map[string]any, n int) (*url.URL, error) {
	u := *base
	q := u.Query()
	set := false
	for k, v := range params {
		switch x := v.(type) {
		case nil:
			q.Del(k)
			continue
		case string:
			q.Set(k, x)
		case int:
			q.Set(k, strconv.Itoa(x))
		case float64:
			q.Set(k, strconv.FormatFloat(x, 'f', -1, 64))
		case bool:
			q.Set(k, strconv.FormatBool(x))
		default:
			b, _ := gojq.Marshal(v)
			return nil, text.Errorf("--paginate-next gave %s for query parameter %s on page %d; give a string or a number", string(b), k, n)
		}
		set = true
	}
	if !set {
		return nil, nil
	}
	u.RawQuery = q.Encode()
	return &u, nil
}

// pageWriter prints the pages' bodies: JSON arrays joined into one array
// (merge), anything else as it came.
type pageWriter struct {
	out   io.Writer
	merge bool // join the pages' JSON arrays
	open  bool // "[" written: "]" is due
	items bool // an item written since "["
}

// page prints one page's body.
func (w *pageWriter) page(body []byte, isJSONPage bool) error {
	trimmed := bytes.TrimSpace(body)
	if !w.merge || !isJSONPage || len(trimmed) < 2 || trimmed[0] != '[' || !json.Valid(trimmed) {
		if err := w.end(); err != nil {
			return err
		}
		w.merge = false // the rest as they come
		_, err := w.out.Write(body)
		return err
	}
	inner := bytes.TrimLeft(bytes.TrimRight(trimmed[1:len(trimmed)-1], " \t\r\n"), "\r\n")
	var b bytes.Buffer
	if !w.open {
		b.WriteString("[")
		w.open = true
	}
	if len(bytes.TrimSpace(inner)) > 0 {
		if w.items {
			b.WriteString(",")
		}
		b.WriteString("\n")
		b.Write(inner)
		w.items = true
	}
	_, err := w.out.Write(b.Bytes())
	return err
}

// end closes the joined array.
func (w *pageWriter) end() error {
	if !w.open {
		return nil
	}
	w.open = false
	closing := "]\n"
	if w.items {
		closing = "\n]\n"
	}
	w.items = false
	_, err := io.WriteString(w.out, closing)
	return err
}
