package authtest

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestDevicePageEscapes: the device page shows the user code it was given
// in its form, escaped: a hostile code cannot put markup on the page.
func TestDevicePageEscapes(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, nil)
	resp, err := http.Get(s.Issuer() + "/device?user_code=" + url.QueryEscape(`"><script>x</script>`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<form method="post" action="`+s.Issuer()+`/device">`) ||
		!strings.Contains(body, `name="password" type="password"`) {
		t.Fatalf("device page: %d\n%s", resp.StatusCode, body)
	}
	if strings.Contains(body, "<script>") || !strings.Contains(body, `value="&#34;&gt;&lt;SCRIPT&gt;X&lt;/SCRIPT&gt;"`) {
		t.Fatalf("the user code is not escaped:\n%s", body)
	}
}
