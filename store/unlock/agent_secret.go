//go:build unix

package unlock

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/shipkey/shipkey/internal/text"
)

// agentSecretLen is the size of the agent's secret and of each nonce.
const (
	agentSecretLen = 32
	agentNonceLen  = 16
)

// AgentSecret makes the agent's secret file (random bytes, 0600) at path
// unless it exists; a file another user owns or others can read is refused.
func AgentSecret(path string) error {
	if path == "" {
		return errors.New("the agent's secret file is not named")
	}
	b := make([]byte, agentSecretLen)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		_, err := readAgentSecret(path)
		return err
	}
	if err != nil {
		return text.FileError("create", path, err)
	}
	_, werr := f.Write([]byte(hex.EncodeToString(b) + "\n"))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return text.FileError("write", path, werr)
	}
	return nil
}

// readAgentSecret reads the secret file at path, refusing one of another
// user or one that others can read.
func readAgentSecret(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("the agent's secret file is not named")
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, text.FileError("read", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, text.FileError("read", path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is not a private file of this user; remove it and unlock again", text.Path(path))
	}
	raw, err := io.ReadAll(io.LimitReader(f, 4*agentSecretLen))
	if err != nil {
		return nil, text.FileError("read", path, err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(b) != agentSecretLen {
		return nil, fmt.Errorf("%s is damaged; remove it and unlock again", text.Path(path))
	}
	return b, nil
}

// agentMAC is HMAC-SHA256 under secret of who, nc and na, in hex.
func agentMAC(secret []byte, who string, nc, na []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("shipkey-agent " + who + "\x00"))
	m.Write(nc)
	m.Write(na)
	return hex.EncodeToString(m.Sum(nil))
}

// agentDial is the client's side of the handshake on c, then sends req. It
// sends nothing of req unless the other end proved it knows the secret.
func agentDial(c io.Writer, rd *bufio.Reader, secret []byte, req string) error {
	nc := make([]byte, agentNonceLen)
	if _, err := rand.Read(nc); err != nil {
		return err
	}
	if _, err := c.Write([]byte("hello " + hex.EncodeToString(nc) + "\n")); err != nil {
		return err
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	f := strings.Fields(line)
	if len(f) != 2 {
		return ErrNotTheAgent
	}
	na, err := hex.DecodeString(f[0])
	if err != nil || len(na) != agentNonceLen || !hmac.Equal([]byte(f[1]), []byte(agentMAC(secret, "agent", nc, na))) {
		return ErrNotTheAgent
	}
	_, err = c.Write([]byte(agentMAC(secret, "client", nc, na) + " " + req + "\n"))
	return err
}

// agentAccept is the agent's side of the handshake on c; it returns the
// client's request once the client proved it knows the secret.
func agentAccept(c io.Writer, rd *bufio.Reader, secret []byte) (string, bool) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", false
	}
	hexNC, ok := strings.CutPrefix(strings.TrimSpace(line), "hello ")
	nc, err := hex.DecodeString(hexNC)
	if !ok || err != nil || len(nc) != agentNonceLen {
		return "", false
	}
	na := make([]byte, agentNonceLen)
	if _, err := rand.Read(na); err != nil {
		return "", false
	}
	if _, err := c.Write([]byte(hex.EncodeToString(na) + " " + agentMAC(secret, "agent", nc, na) + "\n")); err != nil {
		return "", false
	}
	line, err = rd.ReadString('\n')
	if err != nil {
		return "", false
	}
	mac, req, ok := strings.Cut(strings.TrimSpace(line), " ")
	if !ok || !hmac.Equal([]byte(mac), []byte(agentMAC(secret, "client", nc, na))) {
		return "", false
	}
	return req, true
}
