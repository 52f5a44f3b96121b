package cli

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestFlagParsing builds each command with a runF that captures its parsed
// options (as cli/cli tests its commands): flags and arguments are checked
// without running anything, opening a store or asking the network.
func TestFlagParsing(t *testing.T) {
	t.Parallel()
	type parsed map[string]any
	cases := []struct {
		name string
		// build returns the command and a function that reads what runF got.
		build func(f *factory) (*cobra.Command, func() parsed)
		args  []string
		want  parsed
	}{
		{
			name: "token",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *tokenOptions
				cmd := newCmdToken(f, false, func(_ context.Context, o *tokenOptions) error { got = o; return nil })
				return cmd, func() parsed { return parsed{"label": got.Label, "min": got.MinValid, "header": got.Header} }
			},
			args: []string{"prod", "--min-valid", "5m"},
			want: parsed{"label": "prod", "min": 5 * time.Minute, "header": false},
		},
		{
			name: "header",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *tokenOptions
				cmd := newCmdToken(f, true, func(_ context.Context, o *tokenOptions) error { got = o; return nil })
				return cmd, func() parsed { return parsed{"label": got.Label, "min": got.MinValid, "header": got.Header} }
			},
			args: []string{},
			want: parsed{"label": "", "min": time.Duration(0), "header": true},
		},
		{
			name: "exec",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *execOptions
				cmd := newCmdExec(f, func(_ context.Context, o *execOptions) error { got = o; return nil })
				return cmd, func() parsed {
					return parsed{"label": got.Label, "cmd": got.Command, "min": got.MinValid, "env": got.EnvName}
				}
			},
			args: []string{"prod eu", "--env", "API_TOKEN", "--", "curl", "--min-valid", "-H", "x"},
			want: parsed{"label": "prod eu", "cmd": []string{"curl", "--min-valid", "-H", "x"}, "min": time.Minute, "env": "API_TOKEN"},
		},
		{
			name: "exec without label",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *execOptions
				cmd := newCmdExec(f, func(_ context.Context, o *execOptions) error { got = o; return nil })
				return cmd, func() parsed { return parsed{"label": got.Label, "cmd": got.Command, "min": got.MinValid} }
			},
			args: []string{"--min-valid", "90s", "--", "env"},
			want: parsed{"label": "", "cmd": []string{"env"}, "min": 90 * time.Second},
		},
		{
			name: "status",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *statusOptions
				cmd := newCmdStatus(f, func(_ context.Context, o *statusOptions) error { got = o; return nil })
				return cmd, func() parsed { return parsed{"label": got.Label, "json": got.JSON, "quiet": got.Quiet} }
			},
			args: []string{"-q", "prod"},
			want: parsed{"label": "prod", "json": false, "quiet": true},
		},
		{
			name: "login",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *loginOptions
				cmd := newCmdLogin(f, func(_ context.Context, o *loginOptions) error { got = o; return nil })
				return cmd, func() parsed { return parsed{"label": got.Label, "stdin": got.PasswordStdin} }
			},
			args: []string{"--password-stdin", "prod"},
			want: parsed{"label": "prod", "stdin": true},
		},
		{
			name: "logout",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *logoutOptions
				cmd := newCmdLogout(f, func(_ context.Context, o *logoutOptions) error { got = o; return nil })
				return cmd, func() parsed { return parsed{"label": got.Label} }
			},
			args: []string{"staging"},
			want: parsed{"label": "staging"},
		},
		{
			name: "inspect",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *inspectOptions
				cmd := newCmdInspect(f, func(_ context.Context, o *inspectOptions) error { got = o; return nil })
				return cmd, func() parsed {
					return parsed{"token": got.Token, "key": got.Key, "json": got.JSON, "verify": got.Verify}
				}
			},
			args: []string{"--key", "prod", "--verify", "--json"},
			want: parsed{"token": "", "key": "prod", "json": true, "verify": true},
		},
		{
			name: "keys new",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *keysNewOptions
				cmd := newCmdKeysNew(f, func(_ context.Context, o *keysNewOptions) error { got = o; return nil })
				return cmd, func() parsed {
					return parsed{"label": got.Label, "auth": got.AuthURL, "realm": got.Realm, "client": got.ClientID,
						"user": got.Username, "scopes": got.Scopes, "basic": got.BasicAuth, "remember": got.RememberPassword}
				}
			},
			args: []string{"--label", "prod", "--auth-url", "https://auth.example.com", "--realm", "ship",
				"--client-id", "shipping-api", "--username", "me", "--scope", "email profile", "--scope", "x",
				"--basic-auth", "--remember-password"},
			want: parsed{"label": "prod", "auth": "https://auth.example.com", "realm": "ship", "client": "shipping-api",
				"user": "me", "scopes": []string{"email profile", "x"}, "basic": true, "remember": true},
		},
		{
			name: "keys list",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *keysListOptions
				cmd := newCmdKeysList(f, func(o *keysListOptions) error { got = o; return nil })
				return cmd, func() parsed { return parsed{"json": got.JSON} }
			},
			args: []string{"--json"},
			want: parsed{"json": true},
		},
		{
			name: "keys rm",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *keysRmOptions
				cmd := newCmdKeysRm(f, func(_ context.Context, o *keysRmOptions) error { got = o; return nil })
				return cmd, func() parsed { return parsed{"label": got.Label, "yes": got.Yes} }
			},
			args: []string{"-y", "old"},
			want: parsed{"label": "old", "yes": true},
		},
		{
			name: "keys rename",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *keysRenameOptions
				cmd := newCmdKeysRename(f, func(o *keysRenameOptions) error { got = o; return nil })
				return cmd, func() parsed { return parsed{"from": got.Label, "to": got.NewLabel} }
			},
			args: []string{"a", "b c"},
			want: parsed{"from": "a", "to": "b c"},
		},
		{
			name: "keys default",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *keysDefaultOptions
				cmd := newCmdKeysDefault(f, func(o *keysDefaultOptions) error { got = o; return nil })
				return cmd, func() parsed { return parsed{"label": got.Label} }
			},
			args: []string{"prod"},
			want: parsed{"label": "prod"},
		},
		{
			name: "demo",
			build: func(f *factory) (*cobra.Command, func() parsed) {
				var got *demoOptions
				cmd := newCmdDemo(f, func(_ context.Context, o *demoOptions) error { got = o; return nil })
				return cmd, func() parsed { return parsed{"serve": got.Serve, "addr": got.Addr} }
			},
			args: []string{"--serve", "--addr", "127.0.0.1:8080"},
			want: parsed{"serve": true, "addr": "127.0.0.1:8080"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ios, _, _ := testIO("")
			f := newFactory(ios, func(string) string { return "" })
			f.openStore = nil // a run that opened the store would panic
			cmd, read := tc.build(f)
			cmd.SetArgs(tc.args)
			cmd.SetOut(ios.Out)
			cmd.SetErr(ios.ErrOut)
			if err := cmd.ExecuteContext(context.Background()); err != nil {
				t.Fatalf("%q: %v", tc.args, err)
			}
			if got := read(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%q parsed as %v, want %v", tc.args, got, tc.want)
			}
		})
	}
}

// TestFlagErrors checks, through runF, that bad flag combinations are usage
// errors before anything runs.
func TestFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		build func(f *factory, ran *bool) *cobra.Command
		args  []string
	}{
		{"token negative min-valid", func(f *factory, ran *bool) *cobra.Command {
			return newCmdToken(f, false, func(context.Context, *tokenOptions) error { *ran = true; return nil })
		}, []string{"--min-valid", "-1s"}},
		{"exec without --", func(f *factory, ran *bool) *cobra.Command {
			return newCmdExec(f, func(context.Context, *execOptions) error { *ran = true; return nil })
		}, []string{"prod", "curl"}},
		{"exec bad env name", func(f *factory, ran *bool) *cobra.Command {
			return newCmdExec(f, func(context.Context, *execOptions) error { *ran = true; return nil })
		}, []string{"--env", "1X", "--", "env"}},
		{"status json and quiet", func(f *factory, ran *bool) *cobra.Command {
			return newCmdStatus(f, func(context.Context, *statusOptions) error { *ran = true; return nil })
		}, []string{"--json", "-q"}},
		{"keys new missing flags", func(f *factory, ran *bool) *cobra.Command {
			return newCmdKeysNew(f, func(context.Context, *keysNewOptions) error { *ran = true; return nil })
		}, []string{"--username", "me"}},
		{"token dpop-nonce without dpop-proof", func(f *factory, ran *bool) *cobra.Command {
			return newCmdToken(f, false, func(context.Context, *tokenOptions) error { *ran = true; return nil })
		}, []string{"prod", "--dpop-nonce", "n"}},
		{"token dpop-proof without URL", func(f *factory, ran *bool) *cobra.Command {
			return newCmdToken(f, false, func(context.Context, *tokenOptions) error { *ran = true; return nil })
		}, []string{"--dpop-proof", "GET"}},
		{"token dpop-proof with no-store", func(f *factory, ran *bool) *cobra.Command {
			return newCmdToken(f, false, func(context.Context, *tokenOptions) error { *ran = true; return nil })
		}, []string{"--no-store", "--dpop-proof", "GET", "https://api.example.com/x"}},
		{"api key twice", func(f *factory, ran *bool) *cobra.Command {
			return newCmdAPI(f, func(context.Context, *apiOptions) error { *ran = true; return nil })
		}, []string{"--key", "a", "b", "/x"}},
		{"keys set nothing", func(f *factory, ran *bool) *cobra.Command {
			return newCmdKeysSet(f, func(*keysSetOptions) error { *ran = true; return nil })
		}, []string{"prod"}},
		{"inspect token and key", func(f *factory, ran *bool) *cobra.Command {
			return newCmdInspect(f, func(context.Context, *inspectOptions) error { *ran = true; return nil })
		}, []string{"tok", "--key", "prod"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ios, _, _ := testIO("")
			f := newFactory(ios, func(string) string { return "" })
			ran := false
			cmd := tc.build(f, &ran)
			cmd.SetArgs(tc.args)
			cmd.SetOut(ios.Out)
			cmd.SetErr(ios.ErrOut)
			err := cmd.ExecuteContext(context.Background())
			if exitCode(err) != exitUsage || ran {
				t.Errorf("%q: err %v (exit %d), ran %v; want a usage error before running", tc.args, err, exitCode(err), ran)
			}
		})
	}
}
