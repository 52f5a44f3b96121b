package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/unlock"
)

// unlockOptions are the store's session settings: the passphrase from the
// environment (taken at start, see takeSecretEnv) and this binary to serve
// the agent where there is no kernel keyring.
func (f *factory) unlockOptions() store.UnlockOptions {
	o := store.UnlockOptions{Passphrase: f.Getenv(store.EnvPassphrase)}
	f.Secrets.Add(o.Passphrase)
	if exe, err := os.Executable(); err == nil {
		o.AgentExe = exe
	}
	return o
}

// keptBy words where an unlock is kept.
func keptBy(mech string) string {
	switch mech {
	case store.MechKernel:
		return "kept in the kernel keyring"
	case store.MechAgent:
		return "kept by shipkey agent"
	}
	return "not kept"
}

func newCmdUnlock(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "unlock",
		Short: "Unlock the encrypted secrets file for this session",
		Long: `Unlock asks the passphrase of the encrypted secrets file once and keeps the
unlocked key for every shipkey process of this user, so scripts need neither
a prompt nor SHIPKEY_PASSPHRASE, until it has not been used for
SHIPKEY_UNLOCK_TIMEOUT (default 10m; at most 2h after the unlock) or until
shipkey lock. On Linux the kernel keyring keeps it; elsewhere (or with
SHIPKEY_UNLOCK_MECH=agent) a small shipkey agent on a private unix socket.
A running shipkey serve follows: locked, it stops renewing; after unlock it
renews again. With the OS keyring there is nothing to unlock.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := f.Store()
			if err != nil {
				return err
			}
			state, err := st.Session()
			if err != nil {
				return err
			}
			w := f.IO.ErrText()
			if state.Backend != store.BackendFile {
				w.Linef("shipkey: secrets are in the %s backend: nothing to unlock", state.Backend)
				return nil
			}
			if state.Unlocked {
				w.Linef("shipkey: already unlocked (%s); shipkey lock locks it", keptBy(state.Mechanism))
				return nil
			}
			if err := st.Unlock(); err != nil {
				return err
			}
			if state, err = st.Session(); err != nil {
				return err
			}
			if !state.Unlocked {
				return fmt.Errorf("the passphrase is right, but nothing keeps the unlock for other processes: %s", state.Why)
			}
			w.Linef("shipkey: unlocked for %s of inactivity (%s); shipkey lock locks it again", store.FormatTimeout(state.Timeout), keptBy(state.Mechanism))
			return nil
		},
	}
}

func newCmdLock(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "lock",
		Short: "Forget the unlocked secrets file now",
		Long: `Lock forgets the unlocked key of the encrypted secrets file at once, in the
kernel keyring and in shipkey agent (which then exits): the next use asks the
passphrase again; a running shipkey serve drops its copy at its next read
of the secrets. Only this store's unlock is forgotten.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := f.Store()
			if err != nil {
				return err
			}
			held, err := st.Lock()
			if err != nil {
				return err
			}
			if held {
				f.IO.ErrText().Line(text.Trusted("shipkey: locked; the next use of the secrets file asks its passphrase"))
			} else {
				f.IO.ErrText().Line(text.Trusted("shipkey: nothing was unlocked"))
			}
			return nil
		},
	}
}

func newCmdAgent(f *factory) *cobra.Command {
	var (
		socket    string
		secret    string
		idle, max time.Duration
		readyFD   int
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Keep the unlocked secrets file for this session (started by unlock)",
		Long: `Agent keeps unlocked keys in memory and serves them to shipkey processes of
this user on a unix socket in a 0700 directory. shipkey unlock starts it
(detached, with an empty environment) where there is no kernel keyring; it
exits when its keys time out or on shipkey lock.`,
		Hidden: true,
		Args:   usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if socket == "" || secret == "" {
				st, err := f.Store()
				if err != nil {
					return err
				}
				if socket == "" {
					socket = st.AgentSocket()
				}
				if secret == "" {
					secret = st.AgentSecret()
				}
			}
			cfg := unlock.AgentConfig{Socket: socket, Secret: secret, Idle: idle, MaxAge: max}
			if readyFD > 2 {
				ready := os.NewFile(uintptr(readyFD), "ready")
				cfg.Ready = func() {
					fmt.Fprintln(ready, "ready")
					ready.Close()
				}
			}
			return unlock.ServeAgent(cmd.Context(), cfg)
		},
	}
	cmd.Flags().StringVar(&socket, "socket", "", "unix socket to serve (default: the store's)")
	cmd.Flags().StringVar(&secret, "secret-file", "", "file of the secret clients prove they know (default: the store's)")
	cmd.Flags().DurationVar(&idle, "idle", store.DefaultUnlockTimeout, "forget a key unused this long")
	cmd.Flags().DurationVar(&max, "max", 2*time.Hour, "forget a key this long after the unlock")
	cmd.Flags().IntVar(&readyFD, "ready-fd", 0, "file descriptor to write \"ready\" to once listening")
	return cmd
}
