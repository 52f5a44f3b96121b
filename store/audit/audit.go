// Package audit is shipkey's trail of hand-outs: one line of JSON for each
// token, header, DPoP proof or copy handed out, saying when, of which key,
// for which audience, what (by its fingerprint, never the token) and to
// whom (the receiving process as the system describes it), in an
// append-only file in the state directory. Each entry is chained to the one
// before by a SHA-256 hash, across rotated files too, so that an edit of
// any entry is found (Verify).
//
// It never writes a token, a secret or anything that could be turned back
// into one: Fingerprint is the only thing of a token it keeps.
//
// The file: audit.jsonl, rotated by size to audit-NNNNNN.jsonl (the oldest
// dropped past Options.Keep). Each line is an Entry's JSON with "hash"
// last: the hex SHA-256 of the line's bytes before `,"hash":` followed by
// "}", bytes that include "prev", the hash of the entry before (of the last
// entry of the previous file for a file's first; empty for the first entry
// ever). An append is one write(2) of one whole line with O_APPEND, under a
// file lock (audit.lock) shared by every shipkey process. A line cut short
// (the machine lost power in the write) is tolerated as the last line of
// the newest file only, and cut away by the next append, before it writes:
// such an entry was never finished, and its hand-out never happened (every
// hand-out is recorded before the token leaves the process).
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// What is what was handed out.
type What string

// What a hand-out gave.
const (
	Token  What = "token"  // the access token (stdout, a socket, a child's environment)
	Header What = "header" // an Authorization header (shipkey header, api, curl, the Request screen)
	Proof  What = "proof"  // the token with a DPoP proof signed for one request
	Copy   What = "copy"   // the token copied to the clipboard by the app
	Reveal What = "reveal" // the token shown whole on the app's screen
)

// Receiver is the process a hand-out went to, as the system says it.
type Receiver struct {
	UID int `json:"uid"`
	PID int `json:"pid"`
	// Exe is the executable's path (empty where the system does not say).
	Exe string `json:"exe,omitempty"`
	// Cmdline is its command line, cut at MaxCmdline bytes.
	Cmdline []string `json:"cmdline,omitempty"`
	// SSH is the ssh session it runs in (SSH_CONNECTION, and SSH_TTY when
	// there is one); empty outside ssh.
	SSH string `json:"ssh,omitempty"`
}

// Entry is one hand-out.
type Entry struct {
	Time     time.Time `json:"time"`
	Key      string    `json:"key"`
	Audience string    `json:"audience,omitempty"`
	What     What      `json:"what"`
	// Via is the way it went: the command (token, header, api, curl,
	// exec, exec --serve, serve, kubectl) or the app's (app copy, app
	// reveal, app request).
	Via string `json:"via"`
	// Fingerprint identifies the access token handed out (Fingerprint);
	// for a proof, the token the proof is bound to.
	Fingerprint string `json:"fp"`
	// To is the receiving process.
	To Receiver `json:"to"`
	// By is the pid of the shipkey process that handed it out.
	By int `json:"by"`
	// Prev and Hash chain the entry (see the package doc); Append sets
	// them.
	Prev string `json:"prev"`
	Hash string `json:"hash,omitempty"`
}

// Fingerprint is what the trail keeps of a token: the first 16 hex digits of
// its SHA-256, enough to tell which of the tokens one holds was handed out,
// useless to get the token back.
func Fingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}

// Limits on what an entry keeps of a receiver.
const (
	MaxExe     = 1024
	MaxCmdline = 2048
)

// Bounded returns r cut to the limits (an executable path of MaxExe bytes,
// a command line of MaxCmdline bytes in all), so that a line stays small.
func (r Receiver) Bounded() Receiver {
	if len(r.Exe) > MaxExe {
		r.Exe = r.Exe[:MaxExe]
	}
	total := 0
	for i, a := range r.Cmdline {
		if total+len(a) > MaxCmdline {
			r.Cmdline = append(r.Cmdline[:i:i], a[:MaxCmdline-total]+"…")
			break
		}
		total += len(a)
	}
	return r
}
