package engine

// SetTestHookWatchRead sets what runs between Watch's first read and its
// watch, for the external tests; the returned func restores it.
func SetTestHookWatchRead(f func()) (restore func()) {
	old := testHookWatchRead
	testHookWatchRead = f
	return func() { testHookWatchRead = old }
}
