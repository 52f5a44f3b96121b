package text

import "testing"

func TestBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		256 << 10: "256.0 KiB", 12 << 20: "12.0 MiB", 3 << 30: "3.0 GiB", 5 << 40: "5120.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
