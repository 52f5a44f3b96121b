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
	var r curlRequest
	var explicit, head, get, upload, data bool
	take := func(i int) (string, int) { // the value of the option at i
		if i+1 < len(args) {
			return args[i+1], i + 1
		}
		return "", i
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-" || !strings.HasPrefix(a, "-"):
			r.URLs = append(r.URLs, i)
			continue
		case strings.HasPrefix(a, "--"):
			name := a
			if n, ok := strings.CutPrefix(name, "--no-"); ok && !curlValueOptions[name] {
				// --no-FLAG turns a flag off.
				switch n {
				case "head":
					head = false
				case "get":
					get = false
				}
				continue
			}
			if exp, ok := strings.CutPrefix(name, "--expand-"); ok && curlValueOptions["--"+exp] {
				name = "--" + exp // --expand-data: --data with variables
			}
			if !curlValueOptions[name] {
				switch name {
				case "--head":
					head = true
				case "--get":
					get = true
				case "--next":
					r.Why = "--next makes several requests"
				case "--location", "--location-trusted":
					r.Follows = true
				}
				continue
			}
			var v string
			v, i = take(i)
			curlOption(name, v, &r, &explicit, &upload, &data)
		default: // short options, combined; a value ends them
			for j := 1; j < len(a); j++ {
				o := "-" + string(a[j])
				if !curlValueOptions[o] {
					switch o {
					case "-I":
						head = true
					case "-G":
						get = true
					case "-:":
						r.Why = "-: (--next) makes several requests"
					case "-L":
						r.Follows = true
					}
					continue
				}
				v := a[j+1:]
				if v == "" {
					v, i = take(i)
				}
				curlOption(o, v, &r, &explicit, &upload, &data)
				break
			}
		}
	}
	if !explicit {
		switch {
		case head:
			r.Method = "HEAD"
		case get:
			r.Method = "GET"
		case upload:
			r.Method = "PUT"
		case data:
			r.Method = "POST"
		default:
			r.Method = "GET"
		}
	}
	return r
}

// curlOption notes what one value option says of the request.
func curlOption(opt, v string, r *curlRequest, explicit, upload, data *bool) {
	switch opt {
	case "-X", "--request":
		r.Method, *explicit = v, true
	case "-T", "--upload-file":
		*upload = true
	case "-d", "--data", "--data-ascii", "--data-binary", "--data-raw", "--data-urlencode", "--json", "-F", "--form", "--form-string":
		*data = true
	case "--url":
		r.URLs = append(r.URLs, -1) // counted; its value is not rewritten
	case "-K", "--config":
		r.Why = opt + " reads curl options from a file, which may name other URLs or methods"
	case "--request-target":
		r.RequestTarget = true
	}
}

// curlTarget resolves the one URL argument of args for a request with the
// key's token: a path (starting with /) against apiURL, in place. It
// returns the request's method and full URL. strict (a DPoP proof is
// signed for them) refuses, in one line, arguments that do not name
// exactly one full URL.
func curlTarget(args []string, apiURL func(path string) (string, error), strict bool) (method, target string, err error) {
	r := parseCurlArgs(args)
	for _, i := range r.URLs {
		if i >= 0 && strings.HasPrefix(args[i], "/") {
			full, err := apiURL(args[i])
			if err != nil {
				return "", "", err
			}
			args[i] = full
		}
	}
	if !strict {
		return r.Method, "", nil
	}
	refuse := func(why string) error {
		return usageErrorf("a DPoP proof is signed for one method and URL, and curl's arguments do not tell them (%s); give one URL and the method (-X), or use shipkey api", why)
	}
	switch {
	case r.Follows:
		// curl keeps custom headers across hosts: the proof (and the token)
		// would go wherever a redirect points.
		return "", "", usageErrorf("-L/--location: a DPoP proof is signed for one request and cannot follow a redirect (curl would carry it, and the token, to the redirect's host); drop -L, or use shipkey api, which signs a proof for each request")
	case r.RequestTarget:
		return "", "", usageErrorf("--request-target: the DPoP proof is signed for the URL, and the request would ask for another target; drop --request-target")
	case r.Why != "":
		return "", "", refuse(r.Why)
	case len(r.URLs) == 0:
		return "", "", refuse("no URL")
	case len(r.URLs) > 1:
		return "", "", refuse(fmt.Sprintf("%d URLs", len(r.URLs)))
	case r.URLs[0] < 0:
		return "", "", refuse("--url: give the URL as an argument")
	}
	target = args[r.URLs[0]]
	u, perr := url.Parse(target)
	switch {
	case perr != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return "", "", refuse(text.ShellQuote(target) + " is not a full http(s) URL")
	case strings.ContainsAny(u.Path+u.RawQuery, "{}[]") && !hasCurlFlag(args, "-g", "--globoff"):
		return "", "", refuse(text.ShellQuote(target) + " is a curl glob (several URLs); add -g to send it as it is")
	case r.Method == "":
		return "", "", refuse("-X without a method")
	}
	return r.Method, target, nil
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
