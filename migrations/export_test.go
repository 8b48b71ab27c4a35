package migrations

// SetUseBase turns creating new databases from a base schema on or off,
// and returns the previous setting.
func SetUseBase(on bool) bool {
	old := useBase
	useBase = on
	return old
}
