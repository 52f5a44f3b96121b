package audit

// SetBeforeWrite has fn called as each append is about to write its line
// (the kill test's moment to kill).
func SetBeforeWrite(fn func()) { beforeWrite = fn }
