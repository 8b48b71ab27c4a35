package capture

// windowsNames: Windows resolves trailing dots and spaces, named streams and
// 8.3 short names to the same entry, so VCS names are checked in those
// spellings too.
const windowsNames = true
