package cli

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/shipkey/shipkey/internal/text"
)

// What shipkey curl reads of curl's arguments: the request's method and
// URL, for a DPoP proof signed for them and for a path resolved against the
// key's api_url. curl has no "--opt=value" form; a short option's value may
// be glued to it (-XPOST) and short flags combine (-sSL).

// curlValueOptions are curl's options that take a value (curl 7.88's
// "curl --help all" and the value options added up to curl 8.x). An option
// missing here is read as a flag; should it take a value, that value is
// counted as a URL, and two URLs are refused: a miss fails safe.
var curlValueOptions = map[string]bool{}

func init() {
	for _, o := range strings.Fields(`
--abstract-unix-socket --alt-svc --aws-sigv4 --cacert --capath -E --cert --cert-type --ciphers
-K --config --connect-timeout --connect-to -C --continue-at -b --cookie -c --cookie-jar
--create-file-mode --crlfile --curves -d --data --data-ascii --data-binary --data-raw
--data-urlencode --delegation --dns-interface --dns-ipv4-addr --dns-ipv6-addr --dns-servers
--doh-url -D --dump-header --egd-file --engine --etag-compare --etag-save --expect100-timeout
-F --form --form-string --ftp-account --ftp-alternative-to-user --ftp-method -P --ftp-port
--ftp-ssl-ccc-mode --happy-eyeballs-timeout-ms -H --header --hostpubmd5 --hostpubsha256
--hsts --interface --json --keepalive-time --key --key-type --krb --libcurl --limit-rate
--local-port --login-options --mail-auth --mail-from --mail-rcpt --max-filesize --max-redirs
-m --max-time --netrc-file --noproxy --oauth2-bearer -o --output --output-dir --parallel-max
--pass --pinnedpubkey --proto --proto-default --proto-redir --proxy-cacert --proxy-capath
--proxy-cert --proxy-cert-type --proxy-ciphers --proxy-crlfile --proxy-header --proxy-key
--proxy-key-type --proxy-pass --proxy-pinnedpubkey --proxy-service-name --proxy-tls13-ciphers
--proxy-tlsauthtype --proxy-tlspassword --proxy-tlsuser -U --proxy-user --proxy1 --pubkey
-Q --quote --random-file -r --range --rate -e --referer -X --request --request-target
--resolve --retry --retry-delay --retry-max-time --sasl-authzid --service-name --socks4
--socks4a --socks5 --socks5-gssapi-service --socks5-hostname -Y --speed-limit -y --speed-time
--stderr -t --telnet-option --tftp-blksize -z --time-cond --tls-max --tls13-ciphers
--tlsauthtype --tlspassword --tlsuser --trace --trace-ascii --unix-socket -T --upload-file
--url --url-query -u --user -A --user-agent -w --write-out -x --proxy --preproxy
--variable --ip-tos --vlan-priority --ech --haproxy-clientip --trace-config --ipfs-gateway
--sigalgs --ssl-sessions --upload-flags --knownhosts --keepalive-cnt --proxy-ssl-auto-client-cert
`) {
		curlValueOptions[o] = true
	}
}

// curlRequest is what curl's arguments say of the request.
type curlRequest struct {
	Method string
	// URLs are the arguments that name a URL (positional ones and --url's
	// values), by index in the arguments.
	URLs []int
	// Why, when set, is why the request cannot be told (several requests,
	// a config file that may name more).
	Why string
	// Follows: -L, --location or --location-trusted (curl follows
	// redirects, custom headers and all, to any host).
	Follows bool
	// RequestTarget: --request-target sends another target than the URL's.
	RequestTarget bool
}

// parseCurlArgs reads the method and URL arguments of curl's arguments.
func parseCurlArgs(args []string) curlRequest {
	p := curlParse{args: args}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-" || !strings.HasPrefix(a, "-"):
			p.r.URLs = append(p.r.URLs, i)
		case strings.HasPrefix(a, "--"):
			i = p.long(i)
		default: // short options, combined; a value ends them
			i = p.shorts(i)
		}
	}
	p.r.Method = p.method()
	return p.r
}

// curlParse is a read of curl's arguments under way: the request so far,
// and the flags and options that decide its method.
type curlParse struct {
	args                              []string
	r                                 curlRequest
	explicit, head, get, upload, data bool
}

// take is the value of the option at i, and the index it was at.
func (p *curlParse) take(i int) (string, int) {
	if i+1 < len(p.args) {
		return p.args[i+1], i + 1
	}
	return "", i
}

// long reads the long option at i and returns the index of the last
// argument it took (its value's).
func (p *curlParse) long(i int) int {
	name := p.args[i]
	if n, ok := strings.CutPrefix(name, "--no-"); ok && !curlValueOptions[name] {
		p.unflag(n) // --no-FLAG turns a flag off.
		return i
	}
	if exp, ok := strings.CutPrefix(name, "--expand-"); ok && curlValueOptions["--"+exp] {
		name = "--" + exp // --expand-data: --data with variables
	}
	if !curlValueOptions[name] {
		p.flag(name)
		return i
	}
	v, last := p.take(i)
	p.option(name, v)
	return last
}

// shorts reads the combined short options at i (-sSL, -XPOST, -X POST):
// flags up to the first option that takes a value, glued to it or the
// next argument. It returns the index of the last argument it took.
func (p *curlParse) shorts(i int) int {
	a := p.args[i]
	for j := 1; j < len(a); j++ {
		o := "-" + string(a[j])
		if !curlValueOptions[o] {
			p.flag(o)
			continue
		}
		v := a[j+1:]
		if v == "" {
			v, i = p.take(i)
		}
		p.option(o, v)
		break
	}
	return i
}

// flag notes what a flag (an option without a value), long or short,
// says of the request.
func (p *curlParse) flag(name string) {
	switch name {
	case "--head", "-I":
		p.head = true
	case "--get", "-G":
		p.get = true
	case "--next":
		p.r.Why = "--next makes several requests"
	case "-:":
		p.r.Why = "-: (--next) makes several requests"
	case "--location", "--location-trusted", "-L":
		p.r.Follows = true
	}
}

// unflag notes --no-name, which turns the flag --name off.
func (p *curlParse) unflag(name string) {
	switch name {
	case "head":
		p.head = false
	case "get":
		p.get = false
	}
}

// option notes what one value option says of the request.
func (p *curlParse) option(opt, v string) {
	switch opt {
	case "-X", "--request":
		p.r.Method, p.explicit = v, true
	case "-T", "--upload-file":
		p.upload = true
	case "-d", "--data", "--data-ascii", "--data-binary", "--data-raw", "--data-urlencode", "--json", "-F", "--form", "--form-string":
		p.data = true
	case "--url":
		p.r.URLs = append(p.r.URLs, -1) // counted; its value is not rewritten
	case "-K", "--config":
		p.r.Why = opt + " reads curl options from a file, which may name other URLs or methods"
	case "--request-target":
		p.r.RequestTarget = true
	}
}

// method is the request's method: -X's, else as curl picks it.
func (p *curlParse) method() string {
	switch {
	case p.explicit:
		return p.r.Method
	case p.head:
		return "HEAD"
	case p.get:
		return "GET"
	case p.upload:
		return "PUT"
	case p.data:
		return "POST"
	}
	return "GET"
}

// curlTarget resolves the one URL argument of args for a request with the
// key's token: a path (starting with /) against apiURL, in place. It
// returns the request's method and full URL. strict (a DPoP proof is
// signed for them) refuses, in one line, arguments that do not name
// exactly one full URL.
func curlTarget(args []string, apiURL func(path string) (string, error), strict bool) (method, target string, err error) {
	r := parseCurlArgs(args)
	if err := resolveCurlPaths(args, r.URLs, apiURL); err != nil {
		return "", "", err
	}
	if !strict {
		return r.Method, "", nil
	}
	if err := r.oneRequest(); err != nil {
		return "", "", err
	}
	target = args[r.URLs[0]]
	if err := r.fullTarget(args, target); err != nil {
		return "", "", err
	}
	return r.Method, target, nil
}

// resolveCurlPaths puts a path argument (starting with /) among the URLs
// after apiURL, in place.
func resolveCurlPaths(args []string, urls []int, apiURL func(path string) (string, error)) error {
	for _, i := range urls {
		if i >= 0 && strings.HasPrefix(args[i], "/") {
			full, err := apiURL(args[i])
			if err != nil {
				return err
			}
			args[i] = full
		}
	}
	return nil
}

// refuseDPoP is the error of curl arguments that do not tell the one
// method and URL a DPoP proof is signed for, and why.
func refuseDPoP(why string) error {
	return usageErrorf("a DPoP proof is signed for one method and URL, and curl's arguments do not tell them (%s); give one URL and the method (-X), or use shipkey api", why)
}

// oneRequest refuses a request a DPoP proof cannot be signed for: one that
// follows redirects, asks for another target, or is not one request with
// one URL argument.
func (r curlRequest) oneRequest() error {
	switch {
	case r.Follows:
		// curl keeps custom headers across hosts: the proof (and the token)
		// would go wherever a redirect points.
		return usageErrorf("-L/--location: a DPoP proof is signed for one request and cannot follow a redirect (curl would carry it, and the token, to the redirect's host); drop -L, or use shipkey api, which signs a proof for each request")
	case r.RequestTarget:
		return usageErrorf("--request-target: the DPoP proof is signed for the URL, and the request would ask for another target; drop --request-target")
	case r.Why != "":
		return refuseDPoP(r.Why)
	case len(r.URLs) == 0:
		return refuseDPoP("no URL")
	case len(r.URLs) > 1:
		return refuseDPoP(fmt.Sprintf("%d URLs", len(r.URLs)))
	case r.URLs[0] < 0:
		return refuseDPoP("--url: give the URL as an argument")
	}
	return nil
}

// fullTarget refuses a target a DPoP proof cannot name: not a full http(s)
// URL, a curl glob (several URLs), or a request without a method.
func (r curlRequest) fullTarget(args []string, target string) error {
	u, err := url.Parse(target)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return refuseDPoP(text.ShellQuote(target) + " is not a full http(s) URL")
	case strings.ContainsAny(u.Path+u.RawQuery, "{}[]") && !hasCurlFlag(args, "-g", "--globoff"):
		return refuseDPoP(text.ShellQuote(target) + " is a curl glob (several URLs); add -g to send it as it is")
	case r.Method == "":
		return refuseDPoP("-X without a method")
	}
	return nil
}

// hasCurlFlag reports whether args hold the short flag (alone or among
// combined ones, before a value) or the long one.
func hasCurlFlag(args []string, short, long string) bool {
	for _, a := range args {
		if a == long {
			return true
		}
		if len(a) < 2 || a[0] != '-' || a[1] == '-' {
			continue
		}
		for j := 1; j < len(a); j++ {
			o := "-" + string(a[j])
			if o == short {
				return true
			}
			if curlValueOptions[o] {
				break
			}
		}
	}
	return false
}
