package tui

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/shipkey/shipkey/auth"
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
