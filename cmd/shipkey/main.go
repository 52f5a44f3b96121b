// Command shipkey manages OAuth 2.0 tokens and API keys for the Shipping
// Service API: it gets API keys by the password grant, hands out (and
// refreshes) their access tokens to scripts, inspects tokens, and opens an
// interactive terminal app when run without arguments.
//
// The command layer only parses arguments, gathers secrets from the
// environment, stdin or a hidden prompt, and prints results; everything else
// lives in package store (keys, secrets, the shared token source) and package
// auth (the protocol). It must never take a secret on the command line, print
// one in an error, or write one to a plaintext file.
package main

import "os"

func main() {
	takeSecretEnv()
	os.Exit(run())
}
