// Package tui is shipkey's Bubble Tea v2 face: the full-screen app that gets
// API keys through the credentials walk-through, shows a key's token response
// with live countdowns, lists and manages keys, and inspects token claims.
//
// It works only through package store (the Backend interface, satisfied by
// *store.Store) and auth's pure helpers; it never touches files itself, and
// speaks HTTP only on the Request screen, through the API client the CLI
// hands it (Options.API: the one `shipkey api` sends with). Every store call
// and every request runs in a tea.Cmd, so the UI never blocks.
//
// What it must never do: put a password, client secret or token into a view
// unmasked (a token is shown whole only after the explicit reveal), into an
// error or a log line; or render untrusted text (labels, claims, server error
// descriptions, API answers) that is not text.Clean, cleaned where it entered.
// See README.md for the house rules.
package tui
