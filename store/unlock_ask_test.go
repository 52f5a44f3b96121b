package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An app asks the passphrase in its own screen: UnlockAsks says what Unlock
// would ask (a new passphrase before the key file exists, then the key
// file's), and UnlockWith unlocks with what was typed, asking nothing on
// a terminal (the store has no Passphrase prompt here). A wrong passphrase
// is said and unlocks nothing; another backend asks nothing.
func TestUnlockAsksAndUnlockWith(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	none := UnlockOptions{Mechanism: MechNone}
	s := e.open(Options{Backend: BackendFile, Unlock: none})
	ask, keyFile, err := s.UnlockAsks()
	if err != nil || ask != AskNewPassphrase || !strings.HasSuffix(keyFile, secretsKeyFileName) {
		t.Fatalf("a new store asks %v for %q (%v); want a new passphrase", ask, keyFile, err)
	}
	if err := s.UnlockWith("typed in the app"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.stateDir, secretsKeyFileName)); err != nil {
		t.Fatalf("no key file after UnlockWith: %v", err)
	}
	if ask, _, _ := s.UnlockAsks(); ask != AskNothing {
		t.Fatalf("an unlocked store asks %v", ask)
	}

	again := e.open(Options{Backend: BackendFile, Unlock: none})
	if ask, _, err := again.UnlockAsks(); err != nil || ask != AskPassphrase {
		t.Fatalf("a locked key file asks %v (%v); want its passphrase", ask, err)
	}
	if err := again.UnlockWith("wrong"); !errors.Is(err, ErrBackendLocked) || !strings.Contains(err.Error(), "wrong passphrase") {
		t.Fatalf("a wrong passphrase = %v", err)
	}
	if err := again.UnlockWith("typed in the app"); err != nil {
		t.Fatalf("the passphrase set in the app does not unlock: %v", err)
	}

	if ask, _, err := e.open(Options{Backend: BackendPlaintext}).UnlockAsks(); err != nil || ask != AskNothing {
		t.Fatalf("a plaintext store asks %v (%v)", ask, err)
	}
}
