package cas

// SetRepackHook makes fn run before each repack transaction commits (an
// error from it rolls the transaction back) and returns a function that
// removes it.
func SetRepackHook(fn func() error) func() {
	repackHook = fn
	return func() { repackHook = nil }
}
