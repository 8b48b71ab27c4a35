package controller

// SetBeforeReplace makes apply call fn just before it looks at a path for
// the last time and replaces or deletes it (tests of the race between a
// rewind's plan and its renames).
func SetBeforeReplace(c *Controller, fn func(rel string)) { c.beforeReplace = fn }
