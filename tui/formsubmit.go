package tui

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// submission is what the form sends: the new key, and the paths of its
// client key and certificate, read by the command that creates the key (no
// I/O in Update). A generated client key is made by the store, as `keys new
// --generate-client-key` does, and kept in the secrets backend.
type submission struct {
	nk                store.NewKey
	keyFile, certFile string
}

// fieldError is a failure that belongs to one form field; its message
// names the field.
type fieldError struct {
	field int
	msg   string
}

func (e *fieldError) Error() string { return e.msg }

// errField is the failure of field i: its label, then what is wrong.
func errField(i int, what string) error {
	return &fieldError{field: i, msg: formFields[i].label + ": " + what}
}

// load is the new key with the client key and certificate read from their
// files and checked (the key parses; the certificate is the key's). A file
// that cannot be read or is not a key or certificate is the error of its
// field; nothing is sent then.
func (sub submission) load() (store.NewKey, error) {
	nk := sub.nk
	if sub.keyFile == "" {
		return nk, nil
	}
	b, err := readFormFile(fieldClientKey, sub.keyFile)
	if err != nil {
		return nk, err
	}
	k, _, err := auth.ParseClientKey(b)
	if err != nil {
		return nk, errField(fieldClientKey, err.Error())
	}
	nk.ClientKey = b
	if sub.certFile == "" {
		return nk, nil
	}
	if nk.ClientCert, err = readFormFile(fieldClientCert, sub.certFile); err != nil {
		return nk, err
	}
	if _, err := auth.ParseClientCertificate(nk.ClientCert, k); err != nil {
		return nk, errField(fieldClientCert, err.Error())
	}
	return nk, nil
}

// readFormFile reads the file of field i; a failure says which file and
// why, in one line.
func readFormFile(i int, path string) ([]byte, error) {
	b, err := readCapped(path)
	var pe *fs.PathError
	switch {
	case err == nil:
		return b, nil
	case errors.As(err, &pe):
		return nil, errField(i, "cannot read "+path+": "+pe.Err.Error())
	}
	return nil, errField(i, "cannot read "+path+": "+err.Error())
}

// readCapped reads at most a byte past auth's 1 MiB limit of a key or
// certificate file (a device or a huge file is refused by auth, not read
// whole).
func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<20+1))
}

// flagAliases are the command line's flags that set a form field to one
// value (--basic-auth is --client-auth client_secret_basic).
var flagAliases = map[string][2]string{
	"basic-auth":    {"client-auth", string(auth.ClientSecretBasic)},
	"public-client": {"client-auth", string(auth.ClientAuthNone)},
	// The assertion fields take a file or, after $, a command.
	"assertion-cmd":        {"assertion-file", ""},
	"client-assertion-cmd": {"client-assertion-file", ""},
}

// fieldSetting writes a setting an error's hint names (by the command
// line's flag, auth.FlagName) as the form field that sets it: a field's
// name is its flag's, with _ for -. A flag the form has no field for
// stays a flag; the timeout is a setting, not a field.
func fieldSetting(flag, value string) string {
	if a, ok := flagAliases[flag]; ok {
		flag, value = a[0], a[1]
	}
	if flag == "timeout" {
		return "the timeout"
	}
	i := slices.IndexFunc(formFields[:], func(s fieldSpec) bool { return s.name == strings.ReplaceAll(flag, "-", "_") })
	if i < 0 {
		return auth.FlagName(flag, value)
	}
	spec := formFields[i]
	where := ""
	if spec.advanced {
		where = " under Advanced"
	}
	switch {
	case isToggle(i) && value == "=false":
		return spec.label + " off" + where
	case isToggle(i):
		return spec.label + " on" + where
	case spec.kind == kindChoice && value != "":
		return spec.label + ": " + spec.title(value) + where
	case value == "" || value == "FILE":
		return "the " + spec.label + " field" + where
	}
	return "the " + spec.label + " field: " + value + where
}

// errText is err's line as the app shows it: cleaned, and the settings
// its hint names written as the form's fields.
func errText(err error) string { return errClean(err).String() }

// errClean is errText as clean text, for a toast.
func errClean(err error) text.Clean { return text.Sanitize(auth.RenderError(err, fieldSetting)) }
