package cli

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
)

// redacted replaces a secret in debug output.
const redacted = "[redacted]"

// jwtPattern matches anything shaped like a JWT (base64url JSON header and
// payload): access, refresh and ID tokens.
var jwtPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`) }) // compiled on first use, not at every start

// secretSet is the set of secrets this process has seen (client secrets,
// passwords, tokens), so that debug output can hide them.
type secretSet struct {
	mu      sync.RWMutex
	secrets []string
}

// Add remembers s as a secret. Empty strings are ignored.
func (r *secretSet) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range secrets {
		if s != "" {
			r.secrets = append(r.secrets, s)
		}
	}
}

// Sensitive reports whether s is, contains, or looks like a secret.
func (r *secretSet) Sensitive(s string) bool {
	if s == "" {
		return false
	}
	if jwtPattern().MatchString(s) {
		return true
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			return true
		}
	}
	return false
}

// redactingHandler wraps a slog.Handler and replaces every attribute value
// (and the message) that is or contains a known secret, or looks like a JWT,
// with "[redacted]". Groups are walked; LogValuers are resolved first.
type redactingHandler struct {
	next    slog.Handler
	secrets *secretSet
}

func newRedactingHandler(next slog.Handler, secrets *secretSet) slog.Handler {
	return &redactingHandler{next: next, secrets: secrets}
}

func (h *redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	msg := rec.Message
	if h.secrets.Sensitive(msg) {
		msg = redacted
	}
	out := slog.NewRecord(rec.Time, rec.Level, msg, rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &redactingHandler{next: h.next.WithAttrs(clean), secrets: h.secrets}
}

func (h *redactingHandler) WithGroup(name string) slog.Handler {
	return &redactingHandler{next: h.next.WithGroup(name), secrets: h.secrets}
}

func (h *redactingHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		group := v.Group()
		clean := make([]slog.Attr, len(group))
		for i, g := range group {
			clean[i] = h.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(clean...)}
	case slog.KindString:
		if h.secrets.Sensitive(v.String()) {
			return slog.String(a.Key, redacted)
		}
	case slog.KindAny:
		if h.secrets.Sensitive(fmt.Sprint(v.Any())) {
			return slog.String(a.Key, redacted)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
