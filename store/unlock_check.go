package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"filippo.io/age"
)

// identityOpens reports whether id opens the store's secret files, tried on
// one of them: an identity from the session (kernel keyring or agent) is
// only a cache, and any process of the user could have planted a wrong one.
// With no file to try, or a file too damaged to tell, it is taken.
func (b *fileBackend) identityOpens(id *age.X25519Identity) bool {
	path, ok := b.sampleFile()
	if !ok {
		return true
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return true
	}
	_, err = age.Decrypt(bytes.NewReader(data), id)
	return !errors.Is(err, age.ErrIncorrectIdentity)
}

// sampleFile names one per-key secret file (or the one-file layout's).
func (b *fileBackend) sampleFile() (string, bool) {
	if d, err := os.Open(b.dataPath()); err == nil {
		defer d.Close()
		for {
			names, err := d.Readdirnames(64)
			for _, n := range names {
				if strings.HasSuffix(n, ".age") && !strings.HasPrefix(n, ".") {
					return b.files().dir + string(os.PathSeparator) + n, true
				}
			}
			if err != nil {
				break
			}
		}
	}
	if fileExists(b.legacyPath()) {
		return b.legacyPath(), true
	}
	return "", false
}

// dropCached forgets a cached identity that does not open the files, and
// says so once: the passphrase is asked (or read) next.
func (b *fileBackend) dropCached(sess *session, desc string) {
	sess.forget(desc)
	fmt.Fprintf(sess.warn, "shipkey: the unlocked key cached for %s does not open its secret files; dropped it, asking for the passphrase instead\n",
		displayPath(b.keyPath()))
}
