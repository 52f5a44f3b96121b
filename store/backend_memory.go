package store

import (
	"sync"
)

// memoryBackend keeps secrets in the process only (shipkey demo).
type memoryBackend struct {
	mu sync.Mutex
	m  map[string]keySecrets
}

func newMemoryBackend(backendEnv) secretsBackend { return &memoryBackend{} }

func (b *memoryBackend) Name() string { return BackendMemory }

func (b *memoryBackend) Get(id string) (keySecrets, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ks, ok := b.m[id]
	return ks, ok, nil
}

func (b *memoryBackend) Set(id string, ks keySecrets) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]keySecrets{}
	}
	b.m[id] = ks
	return nil
}

func (b *memoryBackend) Delete(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, id)
	return nil
}
