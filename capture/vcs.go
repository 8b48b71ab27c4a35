package capture

import "strings"

// vcsNames are the directory names of version-control systems: ckpt never
// reads or writes under them, and never records one as a path element.
var vcsNames = []string{".git", ".hg", ".svn", ".jj", ".bzr"}

// isVCSName reports whether a path element names a version-control
// directory on the file systems of this build.
func isVCSName(elem string) bool { return vcsName(elem, windowsNames) }

// vcsName reports whether elem names a version-control directory. Case is
// ignored everywhere: on a case-insensitive file system (macOS and Windows
// by default) .GIT and .Git are .git. With windows set it also refuses what
// Windows resolves to the same entry: a name with trailing dots or spaces
// (".git." is ".git"), a named stream (".git::$INDEX_ALLOCATION") and the
// 8.3 short name (GIT~1; any ~N, since the number depends on what else the
// directory holds).
func vcsName(elem string, windows bool) bool {
	if !windows && (elem == "" || elem[0] != '.') {
		return false // every name in vcsNames starts with a dot (TestVCSNamesStartWithADot)
	}
	if windows {
		if i := strings.IndexByte(elem, ':'); i >= 0 {
			elem = elem[:i]
		}
		elem = strings.TrimRight(elem, ". ")
	}
	for _, v := range vcsNames {
		if strings.EqualFold(elem, v) {
			return true
		}
		if windows && isShortName(elem, v[1:]) {
			return true
		}
	}
	return false
}

// isShortName reports whether elem is stem~N (N decimal), case ignored: the
// 8.3 short name Windows gives a name whose letters are stem after the
// leading dot is dropped.
func isShortName(elem, stem string) bool {
	if len(elem) < len(stem)+2 || !strings.EqualFold(elem[:len(stem)], stem) || elem[len(stem)] != '~' {
		return false
	}
	for _, c := range elem[len(stem)+1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// vcsElem returns the first element of the slash-separated rel that names a
// version-control directory, and whether there is one.
func vcsElem(rel string) (string, bool) {
	for elem := range strings.SplitSeq(rel, "/") {
		if isVCSName(elem) {
			return elem, true
		}
	}
	return "", false
}
