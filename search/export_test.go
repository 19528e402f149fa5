package search

// SetSessionSlice sets IndexSession's slice to n bytes and returns what puts
// it back.
func SetSessionSlice(n int) func() {
	old := sessionSlice
	sessionSlice = n
	return func() { sessionSlice = old }
}
